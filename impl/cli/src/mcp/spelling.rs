//! MCP's words for what core's messages tell the reader to set or run next: a setting is
//! the tool argument that gives it (`ram_mb: 2048`), a follow-up step the tool call that
//! does it (`the logs tool with vm: "w", which: "console"`). What no tool can do (a forced
//! snapshot, raising agent_access) is named as the stoat CLI's operation for a person,
//! in words, never as a flag an agent cannot pass.

use stoat_core::app::{Op, Plain, Setting, Spelling, Step, Value};

/// MCP's spelling.
pub static MCP: Mcp = Mcp;

/// See the module.
#[derive(Debug, Clone, Copy)]
pub struct Mcp;

/// The argument that gives `setting` in the tools that take it (create, update, logs,
/// apply_recipes); `None` for what only a person sets, with the CLI.
fn argument(setting: Setting) -> Option<&'static str> {
    match setting {
        Setting::Ram => Some("ram_mb"),
        Setting::Cpus => Some("cpus"),
        Setting::Disk => Some("disk"),
        Setting::Mode => Some("mode"),
        Setting::Os => Some("os"),
        Setting::Image => Some("image"),
        Setting::Backend => Some("backend"),
        Setting::Only => Some("only"),
        Setting::AgentAccess => Some("agent_access"),
        Setting::SshPort => Some("ssh_port"),
        Setting::Which => Some("which"),
        Setting::ConsolePassword
        | Setting::Param
        | Setting::Force
        | Setting::Remove
        | Setting::Project => None,
    }
}

/// The tool that runs `op`, if one does.
fn tool(op: Op) -> Option<&'static str> {
    match op {
        Op::Logs => Some("logs"),
        Op::Down => Some("stop"),
        Op::Update => Some("update"),
        Op::Forward => Some("forward"),
        Op::Snapshot => Some("snapshot"),
        Op::RecipeLock | Op::RecipeSync => None,
    }
}

/// Whether `op`'s tool takes `setting` (update cannot raise agent_access, snapshot cannot
/// replace, forward edits by the whole list).
fn tool_takes(op: Op, setting: Setting) -> bool {
    match op {
        Op::Logs => setting == Setting::Which,
        Op::Update => matches!(
            setting,
            Setting::Ram | Setting::Cpus | Setting::SshPort | Setting::Disk
        ),
        Op::Down | Op::Forward | Op::Snapshot | Op::RecipeLock | Op::RecipeSync => false,
    }
}

/// A value as a tool argument holds it: numbers bare, words as JSON strings, placeholders
/// as they are.
fn json_value(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Text(text) => quoted(text),
        Value::Placeholder(text) => text.clone(),
    }
}

fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

impl Spelling for Mcp {
    fn setting(&self, setting: Setting, value: Option<&Value>) -> String {
        match (argument(setting), value) {
            (Some(name), Some(value)) => format!("{name}: {}", json_value(value)),
            (Some(name), None) => name.to_owned(),
            (None, _) => format!(
                "{} (which a person sets with the stoat CLI)",
                Plain.setting(setting, value)
            ),
        }
    }

    fn step(&self, step: &Step) -> String {
        // forward's tool replaces the whole list: taking one away is leaving it out.
        if let (Op::Forward, Some(vm), [(Setting::Remove, Some(port))]) =
            (step.op, &step.vm, step.settings.as_slice())
        {
            return format!(
                "the forward tool with vm: {}, pairs that leave out host port {}",
                quoted(vm),
                port.typed()
            );
        }
        let by_tool = step.operands.is_empty()
            && step
                .settings
                .iter()
                .all(|(setting, _)| tool_takes(step.op, *setting));
        match tool(step.op) {
            Some(name) if by_tool => {
                let mut arguments: Vec<String> = step
                    .vm
                    .iter()
                    .map(|vm| format!("vm: {}", quoted(vm)))
                    .collect();
                arguments.extend(
                    step.settings
                        .iter()
                        .map(|(setting, value)| self.setting(*setting, value.as_ref())),
                );
                format!("the {name} tool with {}", arguments.join(", "))
            }
            _ => {
                let plain = Plain.step(step);
                let plain = plain.strip_prefix("the ").unwrap_or(&plain);
                format!("the stoat CLI's {plain} (no tool does it)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_arguments_and_steps_tool_calls_never_flags() {
        assert_eq!(
            MCP.example(Setting::Ram, &Value::Number(2048)),
            "ram_mb: 2048"
        );
        let logs =
            Step::on(Op::Logs, "w").with(Setting::Which, Some(Value::Text("console".into())));
        assert_eq!(
            MCP.step(&logs),
            "the logs tool with vm: \"w\", which: \"console\""
        );
        let raise =
            Step::on(Op::Update, "w").with(Setting::AgentAccess, Some(Value::Text("exec".into())));
        let said = MCP.step(&raise);
        assert!(said.contains("agent access exec"), "{said}");
        assert!(!said.contains("--"), "{said}");
        let remove = Step::on(Op::Forward, "w").with(Setting::Remove, Some(Value::Number(8080)));
        assert!(MCP.step(&remove).contains("leave out host port 8080"));
    }
}
