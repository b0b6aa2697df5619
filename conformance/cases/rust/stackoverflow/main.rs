use std::thread;

// Unbounded recursion in a thread with a 1 MiB stack: Rust's guard page
// handler reports the overflow and aborts the process (SIGABRT).
fn down(v: &mut Vec<u64>, d: u64) -> u64 {
    v.push(d);
    let x = [d; 16];
    down(v, d + 1) + x[(d % 16) as usize]
}

fn main() {
    println!("before");
    let t = thread::Builder::new()
        .name("small".into())
        .stack_size(1 << 20)
        .spawn(|| {
            let mut v = Vec::new();
            down(&mut v, 0)
        })
        .unwrap();
    let r = t.join();
    println!("not reached {:?}", r.is_ok());
}
