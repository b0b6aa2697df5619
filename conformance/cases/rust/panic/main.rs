use std::thread;

// Panics: one in a thread, seen by join; then one on the main thread:
// the message on stderr and exit status 101.
fn main() {
    let r = thread::Builder::new()
        .name("worker".into())
        .spawn(|| {
            let v: Vec<i32> = Vec::new();
            v[3]
        })
        .unwrap()
        .join();
    println!("worker panicked: {}", r.is_err());
    let r = std::panic::catch_unwind(|| "12x".parse::<i32>().unwrap());
    println!("caught: {}", r.is_err());
    let n: Option<i32> = None;
    println!("now failing");
    n.expect("boom at the bottom");
}
