//! Deterministic input generators (RMAT, uniform, rgg, grid2d).
