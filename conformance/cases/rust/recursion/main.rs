use std::thread;

// Deep recursion: a depth-first search down a path of 100000 nodes on the
// main thread, and of 1000000 in a thread spawned with a 512 MiB stack, as
// judges' templates do.
fn dfs(next: &[usize], depth: &mut [u64], v: usize, d: u64) -> u64 {
    depth[v] = d;
    if next[v] == usize::MAX {
        return d;
    }
    let r = dfs(next, depth, next[v], d + 1);
    // Work after the call, so it is not a tail call.
    r + (depth[v] & 1)
}

fn walk(n: usize) -> String {
    let next: Vec<usize> = (0..n).map(|i| if i + 1 < n { i + 1 } else { usize::MAX }).collect();
    let mut depth = vec![0u64; n];
    let r = dfs(&next, &mut depth, 0, 0);
    format!("n={} r={} last={}", n, r, depth[n - 1])
}

fn main() {
    println!("main: {}", walk(100000));
    let t = thread::Builder::new().stack_size(512 << 20).spawn(|| walk(1000000)).unwrap();
    println!("thread: {}", t.join().unwrap());
}
