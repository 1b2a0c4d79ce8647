"""What the embedded API server does to an object before it is stored: CRD schema pruning,
defaulting and validation, per-kind defaults, object-meta validation.
"""
