use super::*;

#[test]
fn a_list_names_files_and_the_directories_above_them() {
    let file = "tests/it/golden/basic/expected.jsonl";
    assert!(names("all", file).unwrap());
    assert!(names(file, file).unwrap());
    assert!(names("README.md, tests/it/golden", file).unwrap());
    assert!(names("tests/it/golden/", file).unwrap());
    assert!(!names("tests/it/gold", file).unwrap());
    assert!(!names("README.md", file).unwrap());
}

#[test]
fn a_switch_or_an_empty_value_is_refused() {
    for value in ["1", "", " , ", "true", "README.md,1"] {
        assert!(
            matches!(names(value, "README.md"), Err(BlessError::NoFile(ref v)) if v == value),
            "{value:?}"
        );
    }
}
