//! `--param`'s text, `recipe.param=value` or `param=value`, read into the typed settings core
//! takes. Which recipe a bare `param=value` belongs to, and whether the recipe is the VM's,
//! core decides: a project or an MCP client sets params without this text.

use stoat_core::app::runtime::ParamSetting;
use stoat_core::{Error, Result};

/// Reads every `--param` argument, in order.
pub fn settings(args: &[String]) -> Result<Vec<ParamSetting>> {
    args.iter().map(|arg| setting(arg)).collect()
}

fn setting(arg: &str) -> Result<ParamSetting> {
    let invalid = |why: &str| Error::InvalidSpec(format!("--param {arg:?}: {why}"));
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| invalid("want recipe.param=value"))?;
    let (recipe, name) = match key.split_once('.') {
        Some((recipe, name)) => (Some(recipe.trim().to_owned()), name.trim()),
        None => (None, key.trim()),
    };
    if name.is_empty() {
        return Err(invalid("the parameter name is empty"));
    }
    Ok(ParamSetting {
        recipe,
        name: name.to_owned(),
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_param_names_its_recipe_or_leaves_it_to_core() {
        let read = settings(&["x=1".into(), "r.y=a=b".into()]).unwrap();
        assert_eq!(read[0].recipe, None);
        assert_eq!((read[0].name.as_str(), read[0].value.as_str()), ("x", "1"));
        assert_eq!(read[1].recipe.as_deref(), Some("r"));
        assert_eq!(
            (read[1].name.as_str(), read[1].value.as_str()),
            ("y", "a=b")
        );
        assert!(settings(&["novalue".into()]).is_err());
        assert!(settings(&["r.=1".into()]).is_err());
    }
}
