"""End-to-end experiments that train models with the torch_bridge ops."""
