"""Distilling the executor (TURA §4.3): teacher trajectories, judged, then LoRA SFT of the small model."""
