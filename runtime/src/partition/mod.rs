//! Work graph and data-balanced work partition (DBWP).
