//! A small router: routes are a method plus a path pattern of literal segments
//! and `{name}` parameters. A path that matches no pattern is a 404; a path that
//! matches with another method is a 405 that lists the allowed methods, and
//! `OPTIONS`, which every path of the table answers with that same list.
//!
//! The router is generic over what a route carries, so it knows nothing of the
//! application; `src/routes.rs` holds the one table of every route.

use super::request::Method;
use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(&'static str),
    Param(&'static str),
}

pub struct Route<H> {
    pub method: Method,
    pub pattern: &'static str,
    segments: Vec<Segment>,
    pub target: H,
}

pub struct Router<H> {
    routes: Vec<Route<H>>,
    /// The routes (positions in `routes`, in order) by their number of
    /// segments and first segment (`None`: a parameter): a path is matched
    /// only against patterns of its own length that begin as it does.
    index: std::collections::HashMap<(usize, Option<&'static str>), Vec<usize>, Fnv>,
}

/// The index's hash, FNV-1a: its keys are a number and a short literal,
/// hashed on every request, and SipHash (the default) cost more than the
/// rest of the look-up. A table fixed at start-up and only ever read has
/// nothing to fear from chosen keys: a path hashing alike costs one more
/// comparison with one of its few dozen keys.
#[derive(Clone, Copy)]
struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> Self {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

type Fnv = std::hash::BuildHasherDefault<FnvHasher>;

/// A matched route and the values of its path parameters.
/// The most segments a pattern may have ([`Router::add`] refuses more): a
/// longer path fits no route, and [`Router::resolve`] answers it 404 without
/// looking.
pub const MAX_SEGMENTS: usize = 16;

pub struct Matched<'r, H> {
    pub route: &'r Route<H>,
    pub params: Vec<(&'static str, String)>,
}

impl<H> Default for Router<H> {
    fn default() -> Self {
        Router {
            routes: Vec::new(),
            index: std::collections::HashMap::default(),
        }
    }
}

impl<H> Router<H> {
    /// Adds a route. Patterns are written like `/ports/{clientCode}`.
    pub fn add(&mut self, method: Method, pattern: &'static str, target: H) {
        let segments: Vec<Segment> = pattern
            .split('/')
            .filter(|s| !s.is_empty())
            .map(
                |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Segment::Param(name),
                    None => Segment::Literal(s),
                },
            )
            .collect();
        assert!(
            segments.len() <= MAX_SEGMENTS,
            "route {pattern} has more than {MAX_SEGMENTS} segments"
        );
        assert!(
            !self
                .routes
                .iter()
                .any(|r| r.method == method && r.pattern == pattern),
            "route {} {pattern} registered twice",
            method.as_str()
        );
        let first = match segments.first() {
            Some(Segment::Literal(literal)) => Some(*literal),
            Some(Segment::Param(_)) | None => None,
        };
        self.index
            .entry((segments.len(), first))
            .or_default()
            .push(self.routes.len());
        self.routes.push(Route {
            method,
            pattern,
            segments,
            target,
        });
    }

    pub fn routes(&self) -> impl Iterator<Item = &Route<H>> {
        self.routes.iter()
    }

    /// Finds the route for a method and decoded path segments.
    ///
    /// Literal segments win over parameters, so `/jobs/{id}` never shadows a
    /// literal sibling such as `/jobs/search`.
    ///
    /// The segments are taken as they come, into an array on the stack (no
    /// allocation); a path longer than any pattern may be ([`MAX_SEGMENTS`])
    /// is a 404 at once.
    pub fn resolve<'p>(
        &self,
        method: Method,
        segments: impl ExactSizeIterator<Item = &'p str>,
    ) -> Result<Matched<'_, H>, ApiError> {
        let count = segments.len();
        if count > MAX_SEGMENTS {
            return Err(no_such_path());
        }
        let mut taken = [""; MAX_SEGMENTS];
        for (slot, segment) in taken.iter_mut().zip(segments) {
            *slot = segment;
        }
        let path = &taken[..count];
        let mut best: Option<(&Route<H>, usize)> = None;
        let literal = path
            .first()
            .and_then(|first| self.index.get(&(path.len(), Some(*first))));
        let param = self.index.get(&(path.len(), None));
        let merged: Vec<usize>;
        let candidates: &[usize] = match (literal, param) {
            (Some(only), None) | (None, Some(only)) => only,
            (None, None) => &[],
            // In the order of the table, as each list is: of two patterns
            // that fit equally well, the first registered wins.
            (Some(literal), Some(param)) => {
                let mut both: Vec<usize> = literal.iter().chain(param).copied().collect();
                both.sort_unstable();
                merged = both;
                &merged
            }
        };
        for route in candidates.iter().map(|&i| &self.routes[i]) {
            if route.method != method {
                continue;
            }
            let Some(literals) = route.matches(path) else {
                continue;
            };
            if best.is_none_or(|(_, n)| literals > n) {
                best = Some((route, literals));
            }
        }
        match best {
            Some((route, _)) => {
                let params = route
                    .segments
                    .iter()
                    .zip(path)
                    .filter_map(|(seg, value)| match seg {
                        Segment::Param(name) => Some((*name, value.to_string())),
                        Segment::Literal(_) => None,
                    })
                    .collect();
                Ok(Matched { route, params })
            }
            None => {
                // No route of this method: a 405 with the methods the path
                // takes, if it takes any.
                let mut allowed: Vec<&'static str> = Vec::new();
                for route in candidates.iter().map(|&i| &self.routes[i]) {
                    if route.matches(path).is_some() && !allowed.contains(&route.method.as_str()) {
                        allowed.push(route.method.as_str());
                    }
                }
                if allowed.is_empty() {
                    return Err(no_such_path());
                }
                // Every path of the table answers OPTIONS (see `App::dispatch`).
                if !allowed.contains(&Method::Options.as_str()) {
                    allowed.push(Method::Options.as_str());
                }
                Err(ApiError::MethodNotAllowed { allow: allowed })
            }
        }
    }
}

/// The 404 of a path no route fits.
fn no_such_path() -> ApiError {
    ApiError::not_found("No such path on this server")
}

impl<H> Route<H> {
    /// The number of literal segments when the path fits this pattern.
    fn matches(&self, path: &[&str]) -> Option<usize> {
        if self.segments.len() != path.len() {
            return None;
        }
        let mut literals = 0;
        for (seg, value) in self.segments.iter().zip(path) {
            match seg {
                Segment::Literal(lit) if lit == value => literals += 1,
                Segment::Literal(_) => return None,
                Segment::Param(_) => {}
            }
        }
        Some(literals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> std::vec::IntoIter<&str> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    #[should_panic(expected = "more than 16 segments")]
    fn a_pattern_longer_than_the_router_takes_is_refused() {
        let mut r = Router::default();
        r.add(Method::Get, &*"/a".repeat(MAX_SEGMENTS + 1).leak(), 1);
    }

    #[test]
    fn a_path_longer_than_any_pattern_is_404() {
        let long = "/ports".repeat(MAX_SEGMENTS + 1);
        assert!(matches!(
            router().resolve(Method::Get, path(&long)),
            Err(ApiError::NotFound(_))
        ));
    }

    fn router() -> Router<u8> {
        let mut r = Router::default();
        r.add(Method::Get, "/ports", 1);
        r.add(Method::Get, "/ports/{code}", 2);
        r.add(Method::Put, "/ports/{code}", 3);
        r.add(Method::Get, "/ports/special", 4);
        r
    }

    #[test]
    fn matches_literals_and_params() {
        let r = router();
        let m = r.resolve(Method::Get, path("/ports/NLRTM")).unwrap();
        assert_eq!(m.route.target, 2);
        assert_eq!(m.params, vec![("code", "NLRTM".to_string())]);
        assert_eq!(
            r.resolve(Method::Get, path("/ports")).unwrap().route.target,
            1
        );
        assert_eq!(
            r.resolve(Method::Get, path("/ports/special"))
                .unwrap()
                .route
                .target,
            4
        );
    }

    #[test]
    fn wrong_method_is_405_with_allow() {
        match r_err(Method::Delete, "/ports/X") {
            ApiError::MethodNotAllowed { allow } => {
                assert_eq!(allow, vec!["GET", "PUT", "OPTIONS"])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_path_is_404() {
        assert_eq!(r_err(Method::Get, "/nowhere").status(), 404);
        assert_eq!(r_err(Method::Get, "/ports/a/b").status(), 404);
    }

    fn r_err(m: Method, p: &str) -> ApiError {
        match router().resolve(m, path(p)) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    /// Patterns that begin with a parameter are found beside those that
    /// begin with the path's literal, and the most literal one wins.
    #[test]
    fn a_pattern_beginning_with_a_parameter_is_still_a_candidate() {
        let mut r = Router::default();
        r.add(Method::Get, "/{kind}/list", 1);
        r.add(Method::Get, "/ports/list", 2);
        r.add(Method::Put, "/{kind}/{id}", 3);
        assert_eq!(
            r.resolve(Method::Get, path("/ports/list"))
                .unwrap()
                .route
                .target,
            2
        );
        assert_eq!(
            r.resolve(Method::Get, path("/docks/list"))
                .unwrap()
                .route
                .target,
            1
        );
        assert_eq!(
            r.resolve(Method::Put, path("/ports/7"))
                .unwrap()
                .route
                .target,
            3
        );
        let refused = r.resolve(Method::Get, path("/ports/7")).err().unwrap();
        assert_eq!(refused.status(), 405);
    }
}
