import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Knowledge-distillation loss: KL(teacher || student) on temperature-softened distributions."""

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
        T = self.temperature
        log_p_student = F.log_softmax(student_logits / T, dim=-1)
        p_teacher = F.softmax(teacher_logits / T, dim=-1)
        return F.kl_div(log_p_student, p_teacher, reduction="batchmean") * (T * T)


batch_size = 16
num_classes = 100
temperature = 2.5


def get_inputs():
    return [torch.randn(batch_size, num_classes) * 3.0, torch.randn(batch_size, num_classes) * 3.0]


def get_init_inputs():
    return [temperature]
