//! The `sliceops` command line (see `sliceops --help`): [`sliceops::cli_main`].

fn main() {
    std::process::exit(sliceops::cli_main());
}
