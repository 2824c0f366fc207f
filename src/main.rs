fn main() {
    println!("better-compute");
}
