"""flax.training: the TrainState of flax.training.train_state (a tracelens shim of flax 0.12.8)."""
