"""kernel-medic: repair near-miss accelerator kernels instead of regenerating them."""

__version__ = "0.1.0"
