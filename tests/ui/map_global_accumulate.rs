use warpfit::prelude::*;

// A global sum cannot accumulate into one element from every task: that is
// a race. The error says how to write it as a fold.
#[nested_reduce]
fn total(i: usize, x: &[f64], sum: &mut [f64]) {
    sum[0] += x[i];
}

fn main() {}
