//! The `quayside` binary: everything happens in [`quayside::cli`].

fn main() {
    std::process::exit(quayside::cli::main());
}
