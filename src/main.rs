//! The `sliceops` command line (see `sliceops --help`).

mod cli;

fn main() {
    std::process::exit(cli::main());
}
