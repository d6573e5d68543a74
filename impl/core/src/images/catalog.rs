//! The image catalog: the built-in one (docs/contract.md behaviour#images, in upstream's order), or the TOML
//! file named by `STOAT_CATALOG`, which replaces it (design#image-catalog: mirrors,
//! air-gapped hosts, tests against a loopback server).
//!
//! A catalog file is a list of `[[image]]` tables; a malformed one is an `invalid_spec` error
//! naming the file and the line.

use std::path::Path;

use serde::Deserialize;

use crate::vm::describe_toml_error;
use crate::vm::Backend;
use crate::{Env, Error, Result};

const MIB: u64 = 1024 * 1024;

/// Where the Alpine release index lives: flavoured entries resolve their file through it.
const ALPINE_INDEX: &str =
    "https://dl-cdn.alpinelinux.org/alpine/latest-stable/releases/x86_64/latest-releases.yaml";

/// How a catalog image's published digest is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// A checksum file (GNU or BSD format) listing the image's file name.
    Url(String),
    /// A sha256 digest, lowercase hex.
    Sha256(String),
    /// A sha512 digest, lowercase hex.
    Sha512(String),
    /// No published digest: the download is unverified.
    None,
}

/// One catalog image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub id: String,
    pub os: String,
    pub variant: String,
    /// One of [`Backend::KNOWN`]: a catalog file naming another word is refused when read.
    pub backend: Backend,
    /// The image URL; for a flavoured entry, the release index URL instead.
    pub url: String,
    /// The bare file name under `isos/` (the URL's last segment); `""` for a flavoured entry,
    /// whose file name is only known once its release index is read.
    pub file: String,
    pub checksum: Checksum,
    /// The declared size, shown until the image is downloaded.
    pub bytes: u64,
    pub ssh_user: String,
    /// An Alpine release-index flavour (`alpine-virt`); the index gives the file and sha256.
    pub flavor: Option<String>,
}

/// The catalog in effect.
#[derive(Debug, Clone)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
}

impl Catalog {
    /// Returns a catalog of exactly these entries.
    pub fn new(entries: Vec<CatalogEntry>) -> Catalog {
        Catalog { entries }
    }

    /// Returns the entries in catalog order.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// Returns the entry called `id`.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        self.entries.iter().find(|entry| entry.id == id)
    }
}

/// Returns the catalog in effect: `STOAT_CATALOG`'s file when set, else the built-in one.
pub fn load(env: &Env) -> Result<Catalog> {
    match env.get("STOAT_CATALOG") {
        Some(path) => load_file(&env.expand_tilde(path)?),
        None => Ok(builtin()),
    }
}

/// Reads a catalog file.
pub fn load_file(path: &Path) -> Result<Catalog> {
    let text = crate::bounded::read_to_string(path)
        .map_err(|e| Error::InvalidSpec(format!("catalog {}: cannot read: {e}", path.display())))?;
    parse(&text).map_err(|e| Error::InvalidSpec(format!("catalog {}: {e}", path.display())))
}

/// Parses catalog text; the error says at which line and why.
pub fn parse(text: &str) -> Result<Catalog, String> {
    let file: RawFile = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
    let mut entries: Vec<CatalogEntry> = Vec::new();
    for raw in file.image {
        let line = line_of(text, raw.span().start);
        let entry = raw
            .into_inner()
            .into_entry()
            .map_err(|why| format!("line {line}: {why}"))?;
        if entries.iter().any(|e| e.id == entry.id) {
            return Err(format!("line {line}: duplicate image id {:?}", entry.id));
        }
        entries.push(entry);
    }
    Ok(Catalog { entries })
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    image: Vec<toml::Spanned<RawImage>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImage {
    id: String,
    os: String,
    #[serde(default)]
    variant: String,
    backend: String,
    url: Option<String>,
    index_url: Option<String>,
    flavor: Option<String>,
    checksum_url: Option<String>,
    sha256: Option<String>,
    sha512: Option<String>,
    #[serde(default)]
    bytes: u64,
    ssh_user: Option<String>,
}

impl RawImage {
    fn into_entry(self) -> Result<CatalogEntry, String> {
        if self.id.trim().is_empty() {
            return Err("id must not be empty".into());
        }
        let backend = known_backend(&self.backend)?;
        let checksum = self.checksum()?;
        let (url, file, flavor) = match (self.url, self.index_url, self.flavor) {
            (Some(url), None, None) => {
                let file = file_name_of_url(&url)
                    .ok_or_else(|| format!("url {url:?} does not end in a file name"))?;
                (url, file, None)
            }
            (None, Some(index), Some(flavor)) => {
                if checksum != Checksum::None {
                    return Err("a flavoured image takes its sha256 from its index".into());
                }
                (index, String::new(), Some(flavor))
            }
            (None, None, _) => return Err(format!("image {:?} needs a url", self.id)),
            _ => return Err("give either url, or index_url with flavor".into()),
        };
        let ssh_user = self
            .ssh_user
            .unwrap_or_else(|| default_ssh_user(&backend).to_owned());
        Ok(CatalogEntry {
            id: self.id,
            os: self.os,
            variant: self.variant,
            backend,
            url,
            file,
            checksum,
            bytes: self.bytes,
            ssh_user,
            flavor,
        })
    }

    fn checksum(&self) -> Result<Checksum, String> {
        match (&self.checksum_url, &self.sha256, &self.sha512) {
            (None, None, None) => Ok(Checksum::None),
            (Some(url), None, None) => Ok(Checksum::Url(url.clone())),
            (None, Some(hex), None) => Ok(Checksum::Sha256(digest_hex(hex, 64, "sha256")?)),
            (None, None, Some(hex)) => Ok(Checksum::Sha512(digest_hex(hex, 128, "sha512")?)),
            _ => Err("give at most one of checksum_url, sha256, sha512".into()),
        }
    }
}

fn digest_hex(hex: &str, len: usize, name: &str) -> Result<String, String> {
    let hex = hex.trim().to_ascii_lowercase();
    if hex.len() == len && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex)
    } else {
        Err(format!("{name} must be {len} hex digits"))
    }
}

/// The backend a catalog entry names, which must be one stoat boots.
fn known_backend(text: &str) -> Result<Backend, String> {
    let backend = Backend::parse(text);
    if Backend::KNOWN.contains(&backend) {
        return Ok(backend);
    }
    let known: Vec<&str> = Backend::KNOWN.iter().map(Backend::as_str).collect();
    Err(format!(
        "backend {text:?} is not one of {}",
        known.join(", ")
    ))
}

/// The account a backend's images log in as.
fn default_ssh_user(backend: &Backend) -> &'static str {
    if *backend == Backend::Cloudinit {
        "stoat"
    } else {
        "root"
    }
}

/// Returns a URL's last path segment (query and fragment dropped), if it names a file.
pub fn file_name_of_url(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let after_scheme = path.split_once("://").map(|(_, rest)| rest).unwrap_or(path);
    let (_, path) = after_scheme.split_once('/')?;
    let name = path.rsplit('/').next().unwrap_or("");
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_owned())
}

fn direct(
    id: &str,
    os: &str,
    variant: &str,
    url: &str,
    checksum: Checksum,
    mib: u64,
) -> CatalogEntry {
    CatalogEntry {
        id: id.into(),
        os: os.into(),
        variant: variant.into(),
        backend: Backend::Cloudinit,
        url: url.into(),
        file: file_name_of_url(url).unwrap_or_default(),
        checksum,
        bytes: mib * MIB,
        ssh_user: "stoat".into(),
        flavor: None,
    }
}

fn alpine_flavor(id: &str, variant: &str, mib: u64) -> CatalogEntry {
    CatalogEntry {
        id: id.into(),
        os: "alpine".into(),
        variant: variant.into(),
        backend: Backend::Apkovl,
        url: ALPINE_INDEX.into(),
        file: String::new(),
        checksum: Checksum::None,
        bytes: mib * MIB,
        ssh_user: "root".into(),
        flavor: Some(id.into()),
    }
}

/// The built-in catalog, in upstream's order (docs/contract.md behaviour#images).
pub fn builtin() -> Catalog {
    let ubuntu = "https://cloud-images.ubuntu.com/releases/24.04/release";
    let debian = "https://cloud.debian.org/images/cloud/trixie/latest";
    let fedora =
        "https://download.fedoraproject.org/pub/fedora/linux/releases/44/Cloud/x86_64/images";
    let arch = "https://geo.mirror.pkgbuild.com/images/latest";
    let alpine_cloud = "https://dl-cdn.alpinelinux.org/alpine/v3.24/releases/cloud";
    Catalog::new(vec![
        direct(
            "ubuntu-24.04",
            "ubuntu",
            "24.04 LTS",
            &format!("{ubuntu}/ubuntu-24.04-server-cloudimg-amd64.img"),
            Checksum::Url(format!("{ubuntu}/SHA256SUMS")),
            595,
        ),
        direct(
            "debian-13",
            "debian",
            "13 (trixie)",
            &format!("{debian}/debian-13-genericcloud-amd64.qcow2"),
            Checksum::Url(format!("{debian}/SHA512SUMS")),
            328,
        ),
        direct(
            "fedora-cloud",
            "fedora",
            "44",
            &format!("{fedora}/Fedora-Cloud-Base-Generic-44-1.7.x86_64.qcow2"),
            Checksum::Url(format!("{fedora}/Fedora-Cloud-44-1.7-x86_64-CHECKSUM")),
            557,
        ),
        direct(
            "arch-cloud",
            "arch",
            "rolling",
            &format!("{arch}/Arch-Linux-x86_64-cloudimg.qcow2"),
            Checksum::Url(format!("{arch}/Arch-Linux-x86_64-cloudimg.qcow2.SHA256")),
            530,
        ),
        alpine_flavor("alpine-standard", "standard", 352),
        alpine_flavor("alpine-virt", "virt", 66),
        direct(
            "alpine-cloud",
            "alpine",
            "3.24 cloud",
            &format!("{alpine_cloud}/generic_alpine-3.24.1-x86_64-bios-cloudinit-r0.qcow2"),
            Checksum::None,
            175,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_matches_upstream_order_and_sizes() {
        let catalog = builtin();
        let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "ubuntu-24.04",
                "debian-13",
                "fedora-cloud",
                "arch-cloud",
                "alpine-standard",
                "alpine-virt",
                "alpine-cloud"
            ]
        );
        assert_eq!(catalog.get("alpine-virt").unwrap().bytes, 69206016);
        assert_eq!(catalog.get("ubuntu-24.04").unwrap().bytes, 623902720);
        assert_eq!(
            catalog.get("debian-13").unwrap().file,
            "debian-13-genericcloud-amd64.qcow2"
        );
        assert_eq!(
            catalog.get("alpine-cloud").unwrap().checksum,
            Checksum::None
        );
        assert_eq!(catalog.get("alpine-virt").unwrap().ssh_user, "root");
    }

    #[test]
    fn parses_the_issue_format() {
        let text = r#"
[[image]]
id = "tiny"
os = "debian"
variant = "test"
backend = "cloudinit"
url = "http://127.0.0.1:8000/dir/tiny.qcow2?x=1"
checksum_url = "http://127.0.0.1:8000/SHA256SUMS"
bytes = 1048576

[[image]]
id = "raw"
os = "alpine"
backend = "apkovl"
url = "http://127.0.0.1:8000/raw.iso"
sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
"#;
        let catalog = parse(text).unwrap();
        let tiny = catalog.get("tiny").unwrap();
        assert_eq!(tiny.file, "tiny.qcow2");
        assert_eq!(tiny.ssh_user, "stoat");
        assert_eq!(
            tiny.checksum,
            Checksum::Url("http://127.0.0.1:8000/SHA256SUMS".into())
        );
        let raw = catalog.get("raw").unwrap();
        assert_eq!(raw.ssh_user, "root");
        assert!(matches!(&raw.checksum, Checksum::Sha256(h) if h.starts_with("e3b0")));
    }

    #[test]
    fn errors_name_the_line() {
        // The line of the `[[image]]` header of the offending table.
        let missing_url = "[[image]]\nid = \"a\"\nos = \"x\"\nbackend = \"ssh\"\nurl = \"http://h/a\"\n\n[[image]]\nid = \"b\"\nos = \"x\"\nbackend = \"ssh\"\n";
        let err = parse(missing_url).unwrap_err();
        assert!(err.contains("line 7") && err.contains("url"), "{err}");
        let unknown = "[[image]]\nid = \"a\"\nos = \"x\"\nbackend = \"ssh\"\nurl = \"http://h/a\"\ncolour = 1\n";
        let err = parse(unknown).unwrap_err();
        assert!(err.contains("colour"), "{err}");
        let syntax = "[[image]]\nid = \"a\nos = 1\n";
        assert!(parse(syntax).unwrap_err().starts_with("line 2"));
        let bad_hex = "[[image]]\nid = \"a\"\nos = \"x\"\nbackend = \"ssh\"\nurl = \"http://h/a\"\nsha256 = \"abc\"\n";
        assert!(parse(bad_hex).unwrap_err().contains("64 hex"));
        for word in ["qwe", "", "Cloudinit"] {
            let bad_backend = format!(
                "[[image]]\nid = \"a\"\nos = \"x\"\nbackend = \"ssh\"\nurl = \"http://h/a\"\n\n[[image]]\nid = \"b\"\nos = \"x\"\nbackend = {word:?}\nurl = \"http://h/b\"\n"
            );
            assert_eq!(
                parse(&bad_backend).unwrap_err(),
                format!("line 7: backend {word:?} is not one of apkovl, cloudinit, ssh")
            );
        }
    }

    #[test]
    fn url_file_names() {
        assert_eq!(
            file_name_of_url("http://h/a/b.qcow2"),
            Some("b.qcow2".into())
        );
        assert_eq!(
            file_name_of_url("http://h/a/b.img?x=/y"),
            Some("b.img".into())
        );
        assert_eq!(file_name_of_url("http://h/"), None);
        assert_eq!(file_name_of_url("http://h"), None);
    }
}
