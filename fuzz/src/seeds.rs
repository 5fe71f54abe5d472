//! Replays a target's seed corpus (`fuzz/seeds/<target>/`, one input per file) through its
//! harness function: what the workspace's tests run on every `cargo test --workspace`.

use std::path::PathBuf;

/// The seed directory of `target`, from the crate that includes this module: `fuzz/seeds` in
/// the nearest directory above its manifest directory that has one (the repository root).
pub fn dir(manifest_dir: &str, target: &str) -> PathBuf {
    let start = PathBuf::from(manifest_dir);
    let root = start.ancestors().find(|a| a.join("fuzz/seeds").is_dir()).unwrap_or(&start).to_path_buf();
    root.join("fuzz/seeds").join(target)
}

/// Runs `harness` on every file of `fuzz/seeds/<target>/`; returns how many ran. A panic in
/// the harness fails the calling test, naming the seed first. Errors: the directory cannot
/// be read, or holds no seed (a misplaced corpus must not pass as "no panic").
pub fn replay(manifest_dir: &str, target: &str, harness: fn(&[u8])) -> std::io::Result<usize> {
    let dir = dir(manifest_dir, target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?.map(|entry| entry.map(|e| e.path())).collect::<Result<_, _>>()?;
    files.sort();
    let mut ran = 0;
    for file in files.iter().filter(|f| f.is_file()) {
        let input = std::fs::read(file)?;
        eprintln!("replaying {}", file.display());
        harness(&input);
        ran += 1;
    }
    if ran == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("no seed in {}", dir.display())));
    }
    Ok(ran)
}
