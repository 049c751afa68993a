//! Release ordering for a changelog tool: the newest version first.

/// Sorts versions newest first; what does not parse is dropped.
pub fn newest_first(vs: &[&str]) -> Vec<String> {
    let mut parsed: Vec<semver::Version> = vs.iter().filter_map(|v| semver::Version::parse(v).ok()).collect();
    parsed.sort();
    parsed.reverse();
    parsed.iter().map(|v| v.to_string()).collect()
}

/// Whether two releases are the same one (build metadata aside).
pub fn same_release(a: &str, b: &str) -> bool {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_newest_first() {
        assert_eq!(newest_first(&["1.0.0", "2.1.0", "x", "1.10.0"]), vec!["2.1.0", "1.10.0", "1.0.0"]);
    }

    #[test]
    fn build_metadata_is_the_same_release() {
        assert!(same_release("1.2.3+linux", "1.2.3+darwin"));
    }
}
