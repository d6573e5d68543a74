//! The one integration-test binary of `stoat`: every test runs the real binary in a hermetic
//! data root (see `common`). Add a file per command area and its `mod` line here.

mod common;

mod test_apply;
mod test_basics;
mod test_cancel;
mod test_cliux;
mod test_cp;
mod test_distro;
mod test_doc_examples;
mod test_host;
mod test_image_store;
mod test_images;
mod test_integrity;
mod test_mcp;
mod test_mcp_client;
mod test_mcp_inspector;
mod test_mistakes;
mod test_network;
mod test_project;
mod test_props;
mod test_proxy;
mod test_recipes;
mod test_remote;
mod test_runtime;
mod test_snapshots;
mod test_ssh_mux;
mod test_sweeps;
mod test_ux;
mod test_vmops;
