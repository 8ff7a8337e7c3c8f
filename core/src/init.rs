//! The Init frame: session header and the metadata a viewer needs to name
//! what it is watching. First frame of every connection and of every file.
//!
//! The encode side takes borrowed [`Metadata`]; the decode side,
//! [`InitView`], is checked whole by [`InitView::parse`] and then hands out
//! lazy iterators over the caller's buffer.

use crate::cursor::{Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::frame::{write_frame, FrameKind};
use crate::lane::LaneInfo;
use crate::modules::{self, Modules, MAX_MODULES};
use crate::names::NameSource;
use crate::section::{self, tag, Count, Entries, LaneTable, Names, Sections};
use crate::stacks::{self, FrameSymbols, StackNodes, MAX_NODES_PER_FRAME, MAX_SYMBOLS_PER_FRAME};

/// The format version this crate writes.
pub const FORMAT_VERSION: u16 = 4;
/// The oldest format version this crate reads: version 3 only added the
/// Block's LZ4 flag, so a version 2 stream reads as one whose Blocks are
/// all packed; version 4 only added record kinds, which older streams do
/// not hold.
pub const OLDEST_READ_VERSION: u16 = 2;

/// A field of a component layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// Field name.
    pub name: &'a str,
    /// Type name as the host spells it (`f32`, `Vec3`, ...).
    pub ty: &'a str,
    /// Byte offset in the component.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// A component layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component<'a> {
    /// Component id.
    pub id: u32,
    /// Component name.
    pub name: &'a str,
    /// Size in bytes.
    pub size: u32,
    /// Its fields.
    pub fields: &'a [Field<'a>],
}

/// Which components an archetype is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Archetype<'a> {
    /// Archetype id.
    pub id: u32,
    /// Archetype name.
    pub name: &'a str,
    /// Ids of its components.
    pub components: &'a [u32],
}

/// An index over a component field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Index<'a> {
    /// Id of the indexed component.
    pub component: u32,
    /// Indexed field.
    pub field: &'a str,
    /// Kind of index (`hash`, `btree`, `spatial`, ...).
    pub kind: &'a str,
}

/// One runtime configuration entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigEntry<'a> {
    /// Key.
    pub key: &'a str,
    /// Value, as text.
    pub value: &'a str,
}

/// An event queue of the host runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventQueue<'a> {
    /// Queue id.
    pub id: u32,
    /// Queue name.
    pub name: &'a str,
    /// Capacity in events.
    pub capacity: u32,
}

/// A node of the resource graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource<'a> {
    /// Resource id.
    pub id: u32,
    /// Parent resource id, `None` for a root.
    pub parent: Option<u32>,
    /// Resource name.
    pub name: &'a str,
    /// Kind of resource (`pool`, `buffer`, ...).
    pub kind: &'a str,
}

/// Everything an Init frame says besides names and lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Metadata<'a> {
    /// Clock ticks per second of every timestamp in the session.
    pub ticks_per_second: u64,
    /// Changes whenever the process restarts; the host picks it.
    pub session_id: u64,
    /// Process name.
    pub process_name: &'a str,
    /// Process id.
    pub process_id: u32,
    /// Wall-clock creation time of the session, nanoseconds since the Unix epoch.
    pub created_unix_ns: u64,
    /// Component layouts.
    pub components: &'a [Component<'a>],
    /// Archetype composition.
    pub archetypes: &'a [Archetype<'a>],
    /// Index catalog.
    pub indexes: &'a [Index<'a>],
    /// Runtime configuration.
    pub config: &'a [ConfigEntry<'a>],
    /// Event-queue catalog.
    pub queues: &'a [EventQueue<'a>],
    /// Resource-graph snapshot.
    pub resources: &'a [Resource<'a>],
}

fn write_table<T>(
    w: &mut Writer<'_>,
    tag: u8,
    items: &[T],
    entry: impl Fn(&mut Writer<'_>, &T),
) -> Result<(), EncodeError> {
    section::write_section(w, tag, |w| {
        w.varint(items.len() as u64);
        for item in items {
            entry(w, item);
        }
    })
}

/// Writes an Init frame into `out`. `next_seq` is the sequence number the
/// next frame of the stream will carry; the Init includes every name of
/// `names` and every lane of `lanes`.
pub fn write_init(
    out: &mut [u8],
    next_seq: u32,
    meta: &Metadata<'_>,
    names: &impl NameSource,
    lanes: impl Iterator<Item = LaneInfo>,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::Init, next_seq, |w| {
        w.u16(FORMAT_VERSION);
        w.u16(0);
        w.u64(meta.ticks_per_second);
        w.u64(meta.session_id);
        w.u32(meta.process_id);
        w.u64(meta.created_unix_ns);
        w.str(meta.process_name);
        write_table(w, tag::COMPONENTS, meta.components, |w, c| {
            w.varint(u64::from(c.id));
            w.str(c.name);
            w.varint(u64::from(c.size));
            w.varint(c.fields.len() as u64);
            for f in c.fields {
                w.str(f.name);
                w.str(f.ty);
                w.varint(u64::from(f.offset));
                w.varint(u64::from(f.size));
            }
        })?;
        write_table(w, tag::ARCHETYPES, meta.archetypes, |w, a| {
            w.varint(u64::from(a.id));
            w.str(a.name);
            w.varint(a.components.len() as u64);
            for &c in a.components {
                w.varint(u64::from(c));
            }
        })?;
        write_table(w, tag::INDEXES, meta.indexes, |w, i| {
            w.varint(u64::from(i.component));
            w.str(i.field);
            w.str(i.kind);
        })?;
        write_table(w, tag::CONFIG, meta.config, |w, c| {
            w.str(c.key);
            w.str(c.value);
        })?;
        write_table(w, tag::QUEUES, meta.queues, |w, q| {
            w.varint(u64::from(q.id));
            w.str(q.name);
            w.varint(u64::from(q.capacity));
        })?;
        write_table(w, tag::RESOURCES, meta.resources, |w, r| {
            w.varint(u64::from(r.id));
            w.varint(r.parent.map_or(0, |p| u64::from(p) + 1));
            w.str(r.name);
            w.str(r.kind);
        })?;
        section::write_names(w, 0, names.count(), |id| names.get(id))?;
        section::write_lanes(w, lanes)?;
        // The stacks' first frame's worth: the rest follow in Definitions.
        let nodes = names.stack_node_count().min(MAX_NODES_PER_FRAME);
        if nodes > 0 {
            stacks::write_nodes(w, 0, nodes, |id| names.stack_node(id))?;
        }
        let symbols = names.frame_symbol_count().min(MAX_SYMBOLS_PER_FRAME);
        if symbols > 0 {
            stacks::write_symbols(w, 0, symbols, |i| names.frame_symbol(i))?;
        }
        let modules = names.module_count().min(MAX_MODULES);
        if modules > 0 {
            modules::write_modules(w, 0, modules, |i| names.module(i))?;
        }
        Ok(())
    })
}

/// A component layout read from an Init frame.
#[derive(Clone)]
pub struct ComponentView<'a> {
    /// Component id.
    pub id: u32,
    /// Component name.
    pub name: &'a str,
    /// Size in bytes.
    pub size: u32,
    /// Its fields.
    pub fields: Entries<'a, Field<'a>>,
}

/// An archetype read from an Init frame.
#[derive(Clone)]
pub struct ArchetypeView<'a> {
    /// Archetype id.
    pub id: u32,
    /// Archetype name.
    pub name: &'a str,
    /// Ids of its components.
    pub components: Entries<'a, u32>,
}

fn parse_field<'a>(r: &mut Reader<'a>) -> Result<Field<'a>, DecodeError> {
    Ok(Field {
        name: r.str("field name")?,
        ty: r.str("field type")?,
        offset: r.varint_u32("field offset")?,
        size: r.varint_u32("field size")?,
    })
}

fn parse_component<'a>(r: &mut Reader<'a>) -> Result<ComponentView<'a>, DecodeError> {
    let id = r.varint_u32("component id")?;
    let name = r.str("component name")?;
    let size = r.varint_u32("component size")?;
    let count = r.varint("field count")?;
    let start = *r;
    // Advances `r` past the fields (and checks them).
    *r = Entries::new(start, count, parse_field).check()?;
    Ok(ComponentView {
        id,
        name,
        size,
        fields: Entries::new(start, count, parse_field),
    })
}

fn parse_component_id(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    r.varint_u32("archetype component id")
}

fn parse_archetype<'a>(r: &mut Reader<'a>) -> Result<ArchetypeView<'a>, DecodeError> {
    let id = r.varint_u32("archetype id")?;
    let name = r.str("archetype name")?;
    let count = r.varint("archetype component count")?;
    let start = *r;
    *r = Entries::new(start, count, parse_component_id).check()?;
    Ok(ArchetypeView {
        id,
        name,
        components: Entries::new(start, count, parse_component_id),
    })
}

fn parse_index<'a>(r: &mut Reader<'a>) -> Result<Index<'a>, DecodeError> {
    Ok(Index {
        component: r.varint_u32("index component")?,
        field: r.str("index field")?,
        kind: r.str("index kind")?,
    })
}

fn parse_config<'a>(r: &mut Reader<'a>) -> Result<ConfigEntry<'a>, DecodeError> {
    Ok(ConfigEntry {
        key: r.str("config key")?,
        value: r.str("config value")?,
    })
}

fn parse_queue<'a>(r: &mut Reader<'a>) -> Result<EventQueue<'a>, DecodeError> {
    Ok(EventQueue {
        id: r.varint_u32("queue id")?,
        name: r.str("queue name")?,
        capacity: r.varint_u32("queue capacity")?,
    })
}

fn parse_resource<'a>(r: &mut Reader<'a>) -> Result<Resource<'a>, DecodeError> {
    let id = r.varint_u32("resource id")?;
    let parent = match r.varint("resource parent")? {
        0 => None,
        p => Some(u32::try_from(p - 1).map_err(|_| DecodeError::Malformed {
            what: "resource parent",
        })?),
    };
    Ok(Resource {
        id,
        parent,
        name: r.str("resource name")?,
        kind: r.str("resource kind")?,
    })
}

/// A checked Init frame over the caller's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitView<'a> {
    /// Format version of the stream.
    pub version: u16,
    /// Clock ticks per second.
    pub ticks_per_second: u64,
    /// Session id; a new one means the process restarted.
    pub session_id: u64,
    /// Process id.
    pub process_id: u32,
    /// Session creation time, ns since the Unix epoch.
    pub created_unix_ns: u64,
    /// Process name.
    pub process_name: &'a str,
    /// Sequence number the next frame carries.
    pub next_seq: u32,
    sections: &'a [u8],
}

impl<'a> InitView<'a> {
    /// Parses and checks a whole Init payload.
    pub fn parse(payload: &'a [u8], seq: u32) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let version = r.u16("format version")?;
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(DecodeError::UnsupportedVersion { version });
        }
        let _flags = r.u16("init flags")?;
        let view = InitView {
            version,
            ticks_per_second: r.u64("ticks per second")?,
            session_id: r.u64("session id")?,
            process_id: r.u32("process id")?,
            created_unix_ns: r.u64("creation time")?,
            process_name: r.str("process name")?,
            next_seq: seq,
            sections: r.rest(),
        };
        let mut sections = Sections::new(view.sections);
        while let Some((tag, body)) = sections.next_section()? {
            match tag {
                tag::COMPONENTS => Entries::check_counted(
                    body,
                    Count::Varint,
                    "component table has trailing bytes",
                    parse_component,
                )?,
                tag::ARCHETYPES => Entries::check_counted(
                    body,
                    Count::Varint,
                    "archetype table has trailing bytes",
                    parse_archetype,
                )?,
                tag::INDEXES => Entries::check_counted(
                    body,
                    Count::Varint,
                    "index table has trailing bytes",
                    parse_index,
                )?,
                tag::CONFIG => Entries::check_counted(
                    body,
                    Count::Varint,
                    "config table has trailing bytes",
                    parse_config,
                )?,
                tag::QUEUES => Entries::check_counted(
                    body,
                    Count::Varint,
                    "queue table has trailing bytes",
                    parse_queue,
                )?,
                tag::RESOURCES => Entries::check_counted(
                    body,
                    Count::Varint,
                    "resource table has trailing bytes",
                    parse_resource,
                )?,
                tag::NAMES => {
                    Names::parse(body)?;
                }
                tag::LANES => section::check_lane_table(body)?,
                tag::STACK_NODES => {
                    StackNodes::parse(body)?;
                }
                tag::FRAME_SYMBOLS => {
                    FrameSymbols::parse(body)?;
                }
                tag::MODULES => {
                    Modules::parse(body)?;
                }
                _ => {} // a newer writer's section: skipped
            }
        }
        Ok(view)
    }

    fn table<T>(
        &self,
        tag: u8,
        parse: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Entries<'a, T> {
        Entries::counted(Sections::find(self.sections, tag), Count::Varint, parse)
    }

    /// Component layouts.
    pub fn components(&self) -> Entries<'a, ComponentView<'a>> {
        self.table(tag::COMPONENTS, parse_component)
    }

    /// Archetype composition.
    pub fn archetypes(&self) -> Entries<'a, ArchetypeView<'a>> {
        self.table(tag::ARCHETYPES, parse_archetype)
    }

    /// Index catalog.
    pub fn indexes(&self) -> Entries<'a, Index<'a>> {
        self.table(tag::INDEXES, parse_index)
    }

    /// Runtime configuration.
    pub fn config(&self) -> Entries<'a, ConfigEntry<'a>> {
        self.table(tag::CONFIG, parse_config)
    }

    /// Event-queue catalog.
    pub fn queues(&self) -> Entries<'a, EventQueue<'a>> {
        self.table(tag::QUEUES, parse_queue)
    }

    /// Resource-graph snapshot.
    pub fn resources(&self) -> Entries<'a, Resource<'a>> {
        self.table(tag::RESOURCES, parse_resource)
    }

    /// Every name interned when the Init was written, in id order.
    pub fn names(&self) -> Names<'a> {
        Names::parse(Sections::find(self.sections, tag::NAMES)).unwrap_or(Names::EMPTY)
    }

    /// Every lane claimed when the Init was written.
    pub fn lanes(&self) -> LaneTable<'a> {
        section::lane_table(Sections::find(self.sections, tag::LANES))
    }

    /// The first stack nodes interned (the rest follow in Definitions).
    pub fn stack_nodes(&self) -> StackNodes<'a> {
        let body = Sections::find(self.sections, tag::STACK_NODES);
        StackNodes::parse(body).unwrap_or(StackNodes::EMPTY)
    }

    /// The first frame symbols learnt (the rest follow in Definitions).
    pub fn frame_symbols(&self) -> FrameSymbols<'a> {
        let body = Sections::find(self.sections, tag::FRAME_SYMBOLS);
        FrameSymbols::parse(body).unwrap_or(FrameSymbols::EMPTY)
    }

    /// The modules mapped so far (later ones follow in Definitions).
    pub fn modules(&self) -> Modules<'a> {
        Modules::parse(Sections::find(self.sections, tag::MODULES)).unwrap_or(Modules::EMPTY)
    }
}
