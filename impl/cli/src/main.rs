fn main() {
    std::process::exit(stoat_cli::main())
}
