//! The snapshot table `qemu-img snapshot -l` prints, which QEMU's monitor prints too for
//! `info snapshots`: its rows, each with the id qemu addresses it by.

use stoat_wire::dto::Snapshot;

/// One row of `qemu-img snapshot -l`, with the id qemu uses to address it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub snapshot: Snapshot,
}

/// Parses `qemu-img snapshot -l` (or the monitor's `info snapshots`): keeps rows of at least
/// six fields whose fifth is a `YYYY-MM-DD` date. ID and ICOUNT may be `--`; CRLF is fine.
pub fn parse_table(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !is_date(fields[4]) {
                return None;
            }
            let size_display = format!("{} {}", fields[2], fields[3]);
            Some(Row {
                id: fields[0].to_owned(),
                snapshot: Snapshot {
                    tag: fields[1].to_owned(),
                    vm_state: !size_display.starts_with("0 "),
                    size_display,
                    created_display: format!("{} {}", fields[4], fields[5]),
                },
            })
        })
        .collect()
}

fn is_date(field: &str) -> bool {
    let bytes = field.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Snapshot list:\n\
ID      TAG               VM_SIZE                DATE        VM_CLOCK     ICOUNT\n\
1       clean                 0 B 2026-08-04 00:21:33  0000:00:00.000          0\n";

    #[test]
    fn parses_a_real_qemu_img_sample() {
        let rows = parse_table(SAMPLE);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].id, "1");
        assert_eq!(
            rows[0].snapshot,
            Snapshot {
                tag: "clean".into(),
                vm_state: false,
                size_display: "0 B".into(),
                created_display: "2026-08-04 00:21:33".into(),
            }
        );
    }

    #[test]
    fn tolerates_crlf_and_dashes_and_reports_vm_state() {
        let text =
            "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\r\n\
--        booted          203 MiB 2026-08-04 12:00:00  0000:01:02.003         --\r\n\
garbage line\r\n";
        let rows = parse_table(text);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].id, "--");
        assert_eq!(rows[0].snapshot.tag, "booted");
        assert!(rows[0].snapshot.vm_state);
        assert_eq!(rows[0].snapshot.size_display, "203 MiB");
        assert_eq!(rows[0].snapshot.created_display, "2026-08-04 12:00:00");
    }

    #[test]
    fn empty_or_headerless_output_is_no_rows() {
        assert!(parse_table("").is_empty());
        assert!(parse_table("Snapshot list:\nID TAG VM_SIZE DATE VM_CLOCK ICOUNT\n").is_empty());
    }
}
