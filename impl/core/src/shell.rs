//! POSIX shell quoting, the one place core writes words for a shell: guest command lines,
//! values in generated scripts, and the argv a person is shown.

/// `word` single-quoted (a `'` inside written as `'\''`), always, so any word (empty, `a=b` in
/// command position, a leading `~`) reaches the command as exactly itself.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// [`quote`] on raw bytes: a word that is not UTF-8 reaches the shell byte for byte (single
/// quotes protect every byte but `'` itself).
pub fn quote_bytes(word: &[u8], out: &mut Vec<u8>) {
    out.push(b'\'');
    for &byte in word {
        if byte == b'\'' {
            out.extend_from_slice(br"'\''");
        } else {
            out.push(byte);
        }
    }
    out.push(b'\'');
}

/// `argv` quoted word by word and joined by spaces: one command line a shell splits back into
/// exactly that argv.
pub fn join(argv: &[String]) -> String {
    argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// A word for a person to read or paste: bare when it holds only characters no shell treats
/// specially, else [`quote`]d. Only for display: a bare `a=b` first word would be an assignment.
pub fn display(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        quote(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_comes_back_as_itself() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(
            join(&["echo".into(), "it's".into(), String::new()]),
            r"'echo' 'it'\''s' ''"
        );
        let mut bytes = Vec::new();
        quote_bytes(b"a'\xff", &mut bytes);
        assert_eq!(bytes, b"'a'\\''\xff'");
        assert_eq!(display("ls"), "ls");
        assert_eq!(display("-oKey=v"), "-oKey=v");
        assert_eq!(display("a b"), "'a b'");
        assert_eq!(display(""), "''");
    }
}
