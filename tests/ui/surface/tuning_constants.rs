// The apps' tuning constants are not options: they stay inside the apps.
fn main() {
    let _ = warpfit::apps::DELTA_WEIGHTS_CUDA;
    let _ = warpfit::apps::HYBRID_UP_BFS_CUDA;
}
