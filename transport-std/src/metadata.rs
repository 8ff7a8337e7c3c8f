//! An owned copy of the host's [`Metadata`], so that the exporter thread
//! can write an Init for every viewer long after `Profiler::start` returned
//! (and so that readers and tests can keep what an Init said).

use typhon_live_core::init::{
    Archetype, Component, ConfigEntry, EventQueue, Field, Index, Resource,
};
use typhon_live_core::Metadata;

/// An owned component layout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedComponent {
    /// Component id.
    pub id: u32,
    /// Component name.
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Fields: name, type, offset, size.
    pub fields: Vec<(String, String, u32, u32)>,
}

/// Everything an Init says besides names and lanes, owned. The fields
/// mirror [`Metadata`]'s; tables are tuples in the order of its structs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedMetadata {
    /// Clock ticks per second.
    pub ticks_per_second: u64,
    /// Session id.
    pub session_id: u64,
    /// Process name.
    pub process_name: String,
    /// Process id.
    pub process_id: u32,
    /// Session creation time, ns since the Unix epoch.
    pub created_unix_ns: u64,
    /// Component layouts.
    pub components: Vec<OwnedComponent>,
    /// Archetypes: id, name, component ids.
    pub archetypes: Vec<(u32, String, Vec<u32>)>,
    /// Indexes: component, field, kind.
    pub indexes: Vec<(u32, String, String)>,
    /// Runtime configuration: key, value.
    pub config: Vec<(String, String)>,
    /// Event queues: id, name, capacity.
    pub queues: Vec<(u32, String, u32)>,
    /// Resources: id, parent, name, kind.
    pub resources: Vec<(u32, Option<u32>, String, String)>,
}

impl From<&Metadata<'_>> for OwnedMetadata {
    fn from(meta: &Metadata<'_>) -> Self {
        OwnedMetadata {
            ticks_per_second: meta.ticks_per_second,
            session_id: meta.session_id,
            process_name: meta.process_name.into(),
            process_id: meta.process_id,
            created_unix_ns: meta.created_unix_ns,
            components: meta
                .components
                .iter()
                .map(|c| OwnedComponent {
                    id: c.id,
                    name: c.name.into(),
                    size: c.size,
                    fields: c
                        .fields
                        .iter()
                        .map(|f| (f.name.into(), f.ty.into(), f.offset, f.size))
                        .collect(),
                })
                .collect(),
            archetypes: meta
                .archetypes
                .iter()
                .map(|a| (a.id, a.name.into(), a.components.to_vec()))
                .collect(),
            indexes: meta
                .indexes
                .iter()
                .map(|i| (i.component, i.field.into(), i.kind.into()))
                .collect(),
            config: meta
                .config
                .iter()
                .map(|c| (c.key.into(), c.value.into()))
                .collect(),
            queues: meta
                .queues
                .iter()
                .map(|q| (q.id, q.name.into(), q.capacity))
                .collect(),
            resources: meta
                .resources
                .iter()
                .map(|r| (r.id, r.parent, r.name.into(), r.kind.into()))
                .collect(),
        }
    }
}

impl OwnedMetadata {
    /// Copies `meta` for a session: the clock and session fields are the
    /// transport's; an empty process name or id is filled from the process.
    pub(crate) fn for_session(
        meta: &Metadata<'_>,
        ticks_per_second: u64,
        session_id: u64,
        created_unix_ns: u64,
    ) -> Self {
        let mut owned = OwnedMetadata::from(meta);
        owned.ticks_per_second = ticks_per_second;
        owned.session_id = session_id;
        owned.created_unix_ns = created_unix_ns;
        if owned.process_name.is_empty() {
            owned.process_name = std::env::current_exe()
                .ok()
                .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_default();
        }
        if owned.process_id == 0 {
            owned.process_id = std::process::id();
        }
        owned
    }

    /// Runs `f` with a borrowed view of the metadata.
    pub fn with<R>(&self, f: impl FnOnce(Metadata<'_>) -> R) -> R {
        let fields: Vec<Vec<Field<'_>>> = self
            .components
            .iter()
            .map(|c| {
                c.fields
                    .iter()
                    .map(|(name, ty, offset, size)| Field {
                        name,
                        ty,
                        offset: *offset,
                        size: *size,
                    })
                    .collect()
            })
            .collect();
        let components: Vec<Component<'_>> = self
            .components
            .iter()
            .zip(&fields)
            .map(|(c, fields)| Component {
                id: c.id,
                name: &c.name,
                size: c.size,
                fields,
            })
            .collect();
        let archetypes: Vec<Archetype<'_>> = self
            .archetypes
            .iter()
            .map(|(id, name, components)| Archetype {
                id: *id,
                name,
                components,
            })
            .collect();
        let indexes: Vec<Index<'_>> = self
            .indexes
            .iter()
            .map(|(component, field, kind)| Index {
                component: *component,
                field,
                kind,
            })
            .collect();
        let config: Vec<ConfigEntry<'_>> = self
            .config
            .iter()
            .map(|(key, value)| ConfigEntry { key, value })
            .collect();
        let queues: Vec<EventQueue<'_>> = self
            .queues
            .iter()
            .map(|(id, name, capacity)| EventQueue {
                id: *id,
                name,
                capacity: *capacity,
            })
            .collect();
        let resources: Vec<Resource<'_>> = self
            .resources
            .iter()
            .map(|(id, parent, name, kind)| Resource {
                id: *id,
                parent: *parent,
                name,
                kind,
            })
            .collect();
        f(Metadata {
            ticks_per_second: self.ticks_per_second,
            session_id: self.session_id,
            process_name: &self.process_name,
            process_id: self.process_id,
            created_unix_ns: self.created_unix_ns,
            components: &components,
            archetypes: &archetypes,
            indexes: &indexes,
            config: &config,
            queues: &queues,
            resources: &resources,
        })
    }
}
