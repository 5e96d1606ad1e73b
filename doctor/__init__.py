"""rocmdoctor: diagnose and tune PyTorch training on ROCm (and CUDA) machines."""

__version__ = "0.1.0"
