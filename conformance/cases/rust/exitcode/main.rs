use std::io::Write;
use std::process;

// process::exit with a status: buffered output must be flushed by hand.
fn main() {
    println!("exiting with 42");
    let mut out = std::io::stdout();
    write!(out, "no newline").unwrap();
    out.flush().unwrap();
    eprintln!("bye");
    process::exit(42);
}
