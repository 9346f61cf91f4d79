import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sigmoid focal loss for multi-label classification (Lin et al., RetinaNet)."""

    def __init__(self, alpha=0.25, gamma=2.0):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, logits, targets):
        targets = targets.to(logits.dtype)
        p = torch.sigmoid(logits)
        ce_loss = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        loss = ce_loss * ((1 - p_t) ** self.gamma)
        if self.alpha >= 0:
            alpha_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
            loss = alpha_t * loss
        return loss.mean()


batch_size = 32
num_classes = 40


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2
    targets = torch.randint(0, 2, (batch_size, num_classes))
    return [logits, targets]


def get_init_inputs():
    return [0.4, 2.0]
