"""The data path: reading the private records of a fit and computing their statistics."""
