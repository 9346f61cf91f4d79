"""Running untrusted code: a pool of warm workers (torch + triton preloaded) that fork a fresh, locked-down
child per job, the device backends a worker sets up, and the shims for Triton's CPU interpreter. It runs jobs
by name and knows nothing of what they compute.

May import: kernel_medic, kernel_medic.tools
"""
