//! Images: the `images` listing and `pull` (json-v3#per-command-data, json-v3#streaming:
//! `progress` events go to the session's sink). The work is in [`crate::images`].

use stoat_wire::dto::{ImagesData, PullData};

use super::Session;
use crate::images::{catalog, local, pull};
use crate::proxy::ProxyEnv;
use crate::Result;

pub use crate::images::store::Usage;

/// `images`: the catalog and the local files.
pub fn images(s: &Session) -> Result<ImagesData> {
    let catalog = catalog::load(&s.env)?;
    Ok(ImagesData {
        images: local::list(s.root()?, &catalog)?,
    })
}

/// Which VMs use which image file, for the human `images` table.
pub fn usage(s: &Session) -> Result<Usage> {
    crate::images::store::usage(s.root()?)
}

/// `pull <id>`.
pub fn pull(s: &Session, id: &str) -> Result<PullData> {
    let catalog = catalog::load(&s.env)?;
    let stall = pull::stall_window(&s.env)?;
    let proxy = ProxyEnv::from_env(&s.env);
    let cx = pull::PullContext {
        env: &s.env,
        sink: s.events(),
        cancel: &s.cancel,
        stall,
        proxy: &proxy,
    };
    pull::pull(s.root()?, &catalog, id, &cx)
}
