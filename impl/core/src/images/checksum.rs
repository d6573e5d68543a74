//! Checksum files: GNU (`<hex>  <file>`, `<hex> *<file>`) and BSD (`ALG (file) = <hex>`)
//! lines, PGP armour ignored; the algorithm follows the digest's length (docs/contract.md behaviour#images).

use sha2::{Digest, Sha256, Sha512};

/// A digest algorithm stoat verifies with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha256,
    Sha512,
}

impl Algorithm {
    /// Picks the algorithm by hex length: 64 is sha256, 128 is sha512.
    pub fn for_hex(hex: &str) -> Option<Algorithm> {
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        match hex.len() {
            64 => Some(Algorithm::Sha256),
            128 => Some(Algorithm::Sha512),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    /// Returns a fresh hasher.
    pub fn hasher(self) -> Hasher {
        match self {
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(Box::new(Sha512::new())),
        }
    }
}

/// An expected digest: algorithm and lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub algorithm: Algorithm,
    pub hex: String,
}

impl Expected {
    /// Returns the expected digest for this hex, if it is a sha256 or sha512 digest.
    pub fn from_hex(hex: &str) -> Option<Expected> {
        let hex = hex.trim().to_ascii_lowercase();
        Some(Expected {
            algorithm: Algorithm::for_hex(&hex)?,
            hex,
        })
    }
}

/// A running digest.
pub enum Hasher {
    Sha256(Sha256),
    Sha512(Box<Sha512>),
}

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    /// Returns the lowercase hex digest.
    pub fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => hex::encode(h.finalize()),
            Hasher::Sha512(h) => hex::encode(h.finalize()),
        }
    }
}

/// Finds `file`'s digest in a checksum file's text.
pub fn find(text: &str, file: &str) -> Option<Expected> {
    text.lines()
        .filter_map(parse_line)
        .find(|(name, _)| name == file)
        .and_then(|(_, hex)| Expected::from_hex(&hex))
}

/// Parses one line into `(file name, hex)`; `None` for armour, comments and blanks.
fn parse_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') || line.starts_with("-----") {
        return None;
    }
    parse_bsd(line).or_else(|| parse_gnu(line))
}

/// `SHA256 (file) = hex`.
fn parse_bsd(line: &str) -> Option<(String, String)> {
    let (_alg, rest) = line.split_once(" (")?;
    let (name, hex) = rest.rsplit_once(") = ")?;
    Some((strip_dot_slash(name), hex.trim().to_owned()))
}

/// `hex  file` or `hex *file`.
fn parse_gnu(line: &str) -> Option<(String, String)> {
    let (hex, name) = line.split_once(char::is_whitespace)?;
    Algorithm::for_hex(hex)?;
    let name = name.trim_start();
    let name = name.strip_prefix('*').unwrap_or(name);
    Some((strip_dot_slash(name.trim_end()), hex.to_owned()))
}

fn strip_dot_slash(name: &str) -> String {
    name.strip_prefix("./").unwrap_or(name).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H64: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn gnu_forms() {
        let text = format!("{H64}  other.img\n{}  *./tiny.qcow2\n", H64.to_uppercase());
        let found = find(&text, "tiny.qcow2").unwrap();
        assert_eq!(found.algorithm, Algorithm::Sha256);
        assert_eq!(found.hex, H64);
        assert!(find(&text, "missing").is_none());
    }

    #[test]
    fn bsd_with_armour_and_sha512_by_length() {
        let h128 = "ab".repeat(64);
        let text = format!(
            "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n# Fedora\nSHA512 (Fedora.qcow2) = {h128}\nSHA256 (x.iso) = {H64}\n-----BEGIN PGP SIGNATURE-----\n"
        );
        let found = find(&text, "Fedora.qcow2").unwrap();
        assert_eq!(found.algorithm, Algorithm::Sha512);
        assert_eq!(find(&text, "x.iso").unwrap().algorithm, Algorithm::Sha256);
    }

    #[test]
    fn sidecar_with_a_single_line() {
        let text = format!("{H64}  Arch-Linux-x86_64-cloudimg.qcow2\n");
        assert!(find(&text, "Arch-Linux-x86_64-cloudimg.qcow2").is_some());
    }

    #[test]
    fn hashers_agree_with_known_vectors() {
        let mut hasher = Algorithm::Sha256.hasher();
        hasher.update(b"");
        assert_eq!(hasher.finish(), H64);
    }
}
