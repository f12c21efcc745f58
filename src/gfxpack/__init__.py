"""gfxpack: per-GPU-architecture Linux packages for ROCm-style builds."""

__version__ = "0.1.0"
