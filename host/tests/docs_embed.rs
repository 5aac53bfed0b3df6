//! `docs/embedding.md` shows `examples/embed.rs` as it is: the code a reader copies is the
//! code CI runs. (The block is marked `ignore` because the example needs the fake
//! provider, which the doctests of `docs/` do not link.)

#[test]
fn the_embedding_page_holds_the_example_verbatim() {
    let page = include_str!("../../docs/embedding.md");
    let example = include_str!("../examples/embed.rs");
    let code = page
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/embedding.md holds a rust block");
    assert_eq!(
        code, example,
        "docs/embedding.md's example differs from host/examples/embed.rs: copy it over"
    );
}
