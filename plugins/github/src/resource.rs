//! Which of GitHub's rate-limit resources a request counts in.
//!
//! GitHub keeps separate primary limits per resource and names the one a response counted
//! in with `x-ratelimit-resource`; the plugin's observations carry that name as their scope.
//! A request's plan names the same scope, predicted from its route, so what a request is
//! charged lands in the bucket its response reports on.

/// The rate-limit resource of `method` `url`: `core` unless the route has its own.
pub fn of(method: &str, url: &str) -> &'static str {
    let path = path(url);
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let post = method.eq_ignore_ascii_case("POST");
    match segments.as_slice() {
        ["search", "code"] => "code_search",
        ["search", ..] => "search",
        ["graphql"] => "graphql",
        ["scim", ..] => "scim",
        ["app-manifests", _, "conversions"] if post => "integration_manifest",
        ["repos", _, _, "code-scanning", "sarifs"] if post => "code_scanning_upload",
        ["repos", _, _, "dependency-graph", "snapshots"] if post => "dependency_snapshots",
        [.., "actions", "runners", "registration-token"] if post => "actions_runner_registration",
        _ => "core",
    }
}

/// The path of an absolute URL, without its query or fragment.
fn path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_routes_count_in_search_and_code_search_in_its_own() {
        let api = "https://api.github.com";
        assert_eq!(
            of("GET", &format!("{api}/search/issues?q=is:open")),
            "search"
        );
        assert_eq!(
            of("GET", &format!("{api}/search/code?q=addClass")),
            "code_search"
        );
        assert_eq!(of("POST", &format!("{api}/graphql")), "graphql");
    }

    #[test]
    fn uploads_and_registrations_have_their_own_resources() {
        let api = "https://api.github.com";
        assert_eq!(
            of("POST", &format!("{api}/repos/o/r/code-scanning/sarifs")),
            "code_scanning_upload"
        );
        assert_eq!(
            of(
                "POST",
                &format!("{api}/repos/o/r/dependency-graph/snapshots")
            ),
            "dependency_snapshots"
        );
        assert_eq!(
            of(
                "POST",
                &format!("{api}/orgs/o/actions/runners/registration-token")
            ),
            "actions_runner_registration"
        );
        assert_eq!(
            of("POST", &format!("{api}/app-manifests/abc/conversions")),
            "integration_manifest"
        );
        // Reading the same routes is ordinary core traffic.
        assert_eq!(
            of("GET", &format!("{api}/repos/o/r/code-scanning/sarifs")),
            "core"
        );
    }

    #[test]
    fn everything_else_is_core() {
        assert_eq!(of("GET", "https://api.github.com/repos/o/r/issues"), "core");
        assert_eq!(of("GET", "https://api.github.com/"), "core");
        assert_eq!(of("GET", "not a url"), "core");
    }
}
