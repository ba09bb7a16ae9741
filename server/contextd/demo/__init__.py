"""The demo session shipped with contextd (`contextd demo`) and its generator."""
