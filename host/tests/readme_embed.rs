//! The README's embedding section shows `examples/embed.rs` as it is: the code a reader
//! copies is the code CI runs. (The block is marked `ignore` because the README's Rust
//! blocks are also the plugin SDK's doctests, which cannot link the host.)

#[test]
fn the_readme_embedding_section_is_the_example_verbatim() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/embed.rs");
    let section = readme
        .split("## Embedding sluice")
        .nth(1)
        .expect("the README has an Embedding sluice section");
    let code = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section holds a rust block");
    assert_eq!(
        code, example,
        "README.md's embedding example differs from host/examples/embed.rs: copy it over"
    );
}
