//! The location catalog service: ports and inland facilities, two catalogs of
//! one record shape served by one implementation.

pub mod countries;
pub mod import;
pub mod model;
pub mod routes;
pub mod store;

/// Which of the two catalogs a request is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catalog {
    Ports,
    InlandFacilities,
}

impl Catalog {
    pub const ALL: [Catalog; 2] = [Catalog::Ports, Catalog::InlandFacilities];

    /// The value stored in `locations.catalog`, also the path segment.
    pub fn key(self) -> &'static str {
        match self {
            Catalog::Ports => "ports",
            Catalog::InlandFacilities => "inland_facilities",
        }
    }

    /// A record of this catalog, in words.
    pub fn noun(self) -> &'static str {
        match self {
            Catalog::Ports => "port",
            Catalog::InlandFacilities => "inland facility",
        }
    }

    /// Route patterns: the collection and one record.
    pub fn patterns(self) -> (&'static str, &'static str) {
        match self {
            Catalog::Ports => ("/api/rest/1.0/ports", "/api/rest/1.0/ports/{clientCode}"),
            Catalog::InlandFacilities => (
                "/api/rest/1.0/inland_facilities",
                "/api/rest/1.0/inland_facilities/{clientCode}",
            ),
        }
    }
}
