//! What a VM boots with besides its disk: the cloud-init seed (`cloudinit`), the Alpine
//! overlay (`apkovl`, packed by `tarball`) and the kernel and initramfs taken from an image
//! (`kernel`) (docs/contract.md behaviour#qemu).

pub mod apkovl;
pub mod cloudinit;
pub mod kernel;
pub mod tarball;
