fn main() {
    println!("Hello, World!");
    println!("héllo wörld ✓ 日本");
    eprintln!("to stderr");
}
