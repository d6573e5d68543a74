//! Disk sizes as qemu-img takes them: a positive number with an optional K/M/G/T suffix.

use crate::{Error, Result};

/// Parses `8G`, `1.5g`, `512M` or `1048576` into bytes; refuses signs and unknown suffixes.
pub fn parse_size(text: &str) -> Result<u64> {
    let upper = text.trim().to_ascii_uppercase();
    let invalid = || {
        Error::InvalidSpec(format!(
            "size {text:?}: want a positive number with an optional K, M, G or T suffix"
        ))
    };
    if upper.starts_with('+') || upper.starts_with('-') {
        return Err(invalid());
    }
    let (number, shift) = match upper.chars().last() {
        Some('K') => (&upper[..upper.len() - 1], 10),
        Some('M') => (&upper[..upper.len() - 1], 20),
        Some('G') => (&upper[..upper.len() - 1], 30),
        Some('T') => (&upper[..upper.len() - 1], 40),
        _ => (upper.as_str(), 0),
    };
    let value: f64 = number.parse().map_err(|_| invalid())?;
    if !value.is_finite() || value <= 0.0 {
        return Err(invalid());
    }
    let bytes = value * (1u64 << shift) as f64;
    if bytes > u64::MAX as f64 / 2.0 {
        return Err(invalid());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn accepts_and_refuses() {
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert_eq!(parse_size("8g").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("512").unwrap(), 512);
        for bad in ["8GB", "-1G", "+1G", "0", "", "G", "abc", "nan", "inf"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in ".{0,12}") {
            let _ = parse_size(&text);
        }

        #[test]
        fn whole_sizes_round_trip(n in 1u64..100_000, suffix in 0usize..4) {
            let letters = ["K", "M", "G", "T"];
            let bytes = parse_size(&format!("{n}{}", letters[suffix])).unwrap();
            proptest::prop_assert_eq!(bytes, n << (10 * (suffix as u32 + 1)));
        }
    }
}
