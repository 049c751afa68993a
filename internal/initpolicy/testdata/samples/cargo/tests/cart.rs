#[test]
fn totals_two_items() {
    assert_eq!(shop::total(&[250, 100]), 350);
}
