//! [`NameIndex`]: the node names in use, and fresh ones made from a prefix (`prefix.1`, `prefix.2`, ..),
//! for the typed model (names of nodes that patches add) and the ONNX graph (duplicate names) alike.

use std::collections::HashMap;

/// How many nodes carry each name, and per prefix the next suffix worth trying: every smaller one is
/// taken, so the search resumes there (linear overall, where restarting from 1 was quadratic for many
/// nodes sharing a prefix).
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    count: HashMap<String, usize>,
    next_suffix: HashMap<String, usize>,
}

impl NameIndex {
    /// The index of `names` (a name given twice counts twice).
    pub(crate) fn of(names: impl IntoIterator<Item = String>) -> NameIndex {
        let mut index = NameIndex::default();
        for name in names {
            index.add(&name);
        }
        index
    }

    /// How many nodes carry `name`.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.count.get(name).copied().unwrap_or(0)
    }

    /// Whether some node carries `name`.
    pub(crate) fn taken(&self, name: &str) -> bool {
        self.count.contains_key(name)
    }

    /// One more node carries `name`.
    pub(crate) fn add(&mut self, name: &str) {
        *self.count.entry(name.to_string()).or_insert(0) += 1;
    }

    /// One node fewer carries `name`.
    pub(crate) fn remove(&mut self, name: &str) {
        if let Some(c) = self.count.get_mut(name) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                self.count.remove(name);
            }
        }
    }

    /// The first free `prefix.i` (`i` from 1), not added to the index.
    pub(crate) fn suffixed(&mut self, prefix: &str) -> String {
        let i = self.next_suffix.entry(prefix.to_string()).or_insert(1);
        loop {
            let candidate = format!("{prefix}.{i}");
            *i += 1;
            if !self.count.contains_key(&candidate) {
                return candidate;
            }
        }
    }

    /// `prefix` if no node carries it, else [`NameIndex::suffixed`]; not added to the index.
    pub(crate) fn fresh(&mut self, prefix: &str) -> String {
        if self.taken(prefix) {
            self.suffixed(prefix)
        } else {
            prefix.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NameIndex;

    #[test]
    fn fresh_names_skip_taken_suffixes_and_resume_from_the_last() {
        let mut names = NameIndex::of(["x", "x.1", "x.3", "y"].map(String::from));
        assert_eq!(names.fresh("z"), "z");
        assert_eq!(names.fresh("x"), "x.2");
        names.add("x.2");
        assert_eq!(names.fresh("x"), "x.4");
        names.remove("y");
        assert_eq!(names.fresh("y"), "y");
        assert_eq!(names.suffixed("y"), "y.1");
    }
}
