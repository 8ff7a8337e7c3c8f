//! An owned copy of the host's [`Metadata`], so that the exporter thread
//! can write an Init for every viewer long after `Profiler::start` returned.

use typhon_live_core::init::{
    Archetype, Component, ConfigEntry, EventQueue, Field, Index, Resource,
};
use typhon_live_core::Metadata;

#[derive(Clone, Debug, Default)]
struct OwnedComponent {
    id: u32,
    name: String,
    size: u32,
    fields: Vec<(String, String, u32, u32)>,
}

/// Everything an Init says besides names and lanes, owned.
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnedMetadata {
    ticks_per_second: u64,
    session_id: u64,
    process_name: String,
    process_id: u32,
    created_unix_ns: u64,
    components: Vec<OwnedComponent>,
    archetypes: Vec<(u32, String, Vec<u32>)>,
    indexes: Vec<(u32, String, String)>,
    config: Vec<(String, String)>,
    queues: Vec<(u32, String, u32)>,
    resources: Vec<(u32, Option<u32>, String, String)>,
}

impl OwnedMetadata {
    /// Copies `meta`, with the clock and session fields the transport owns.
    pub(crate) fn new(
        meta: &Metadata<'_>,
        ticks_per_second: u64,
        session_id: u64,
        created_unix_ns: u64,
    ) -> Self {
        let process_name = if meta.process_name.is_empty() {
            std::env::current_exe()
                .ok()
                .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .unwrap_or_default()
        } else {
            meta.process_name.to_owned()
        };
        OwnedMetadata {
            ticks_per_second,
            session_id,
            process_name,
            process_id: if meta.process_id == 0 {
                std::process::id()
            } else {
                meta.process_id
            },
            created_unix_ns,
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

    /// Runs `f` with a borrowed view of the metadata.
    pub(crate) fn with<R>(&self, f: impl FnOnce(Metadata<'_>) -> R) -> R {
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
