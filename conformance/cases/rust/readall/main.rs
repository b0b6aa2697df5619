use std::io::{self, Read};

// Reads all of stdin at once and describes it (FNV-1a hash).
fn main() {
    let mut b = Vec::new();
    io::stdin().read_to_end(&mut b).unwrap();
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in &b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let lines = b.iter().filter(|&&x| x == b'\n').count();
    println!("bytes={} lines={} fnv1a={:016x}", b.len(), lines, h);
}
