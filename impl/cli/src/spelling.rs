//! The CLI's words for what core's messages tell a person to set or run next: a setting is
//! its flag (`--ram 2048`), a follow-up step the whole command line (`` `stoat logs w --which
//! console` ``). Every error the CLI prints, in prose or under `--json`, is spelled here.

use stoat_core::app::{Setting, Spelling, Step, Value};

/// The CLI's spelling.
pub static CLI: Cli = Cli;

/// See the module.
#[derive(Debug, Clone, Copy)]
pub struct Cli;

/// The flag that gives `setting`.
fn flag(setting: Setting) -> &'static str {
    match setting {
        Setting::Ram => "--ram",
        Setting::Cpus => "--cpus",
        Setting::Disk => "--disk",
        Setting::Mode => "--mode",
        Setting::Os => "--os",
        Setting::Image => "--image",
        Setting::Backend => "--backend",
        Setting::ConsolePassword => "--console-password",
        Setting::Param => "--param",
        Setting::Only => "--only",
        Setting::AgentAccess => "--agent-access",
        Setting::SshPort => "--ssh-port",
        Setting::Force => "--force",
        Setting::Remove => "--remove",
        Setting::Which => "--which",
        Setting::Project => "--project",
    }
}

impl Spelling for Cli {
    fn setting(&self, setting: Setting, value: Option<&Value>) -> String {
        match value {
            Some(value) => format!("{} {}", flag(setting), value.typed()),
            None => flag(setting).to_owned(),
        }
    }

    /// `--ram` takes MB or a size with its unit: a whole number of GiB shows both forms.
    fn example(&self, setting: Setting, value: &Value) -> String {
        match (setting, value) {
            (Setting::Ram, Value::Number(mb)) if *mb > 0 && mb % 1024 == 0 => {
                format!("--ram {mb} or --ram {}G", mb / 1024)
            }
            _ => self.setting(setting, Some(value)),
        }
    }

    fn step(&self, step: &Step) -> String {
        let mut words = vec!["stoat".to_owned(), step.op.words().to_owned()];
        words.extend(step.vm.iter().cloned());
        words.extend(step.operands.iter().cloned());
        words.extend(
            step.settings
                .iter()
                .map(|(setting, value)| self.setting(*setting, value.as_ref())),
        );
        format!("`{}`", words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stoat_core::app::Op;

    #[test]
    fn steps_are_command_lines_and_ram_shows_both_forms() {
        let logs = Step::on(Op::Logs, "w").with(Setting::Which, Some(Value::Text("apply".into())));
        assert_eq!(CLI.step(&logs), "`stoat logs w --which apply`");
        let lock = Step::alone(Op::RecipeLock).with(Setting::Project, None);
        assert_eq!(CLI.step(&lock), "`stoat recipe lock --project`");
        assert_eq!(
            CLI.example(Setting::Ram, &Value::Number(2048)),
            "--ram 2048 or --ram 2G"
        );
        assert_eq!(CLI.example(Setting::Cpus, &Value::Number(2)), "--cpus 2");
    }
}
