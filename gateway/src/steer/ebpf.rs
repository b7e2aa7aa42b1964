//! Loading, attaching and pinning the eBPF programs, and the daemon's side of
//! their maps.
//!
//! Links and maps are pinned under the configured bpffs directory, so the
//! programs stay attached when the daemon dies: sandbox sockets are then
//! steered to a listener that is gone and fail (connection refused), never
//! reach the network. On start the daemon attaches the new programs *before*
//! it detaches the pinned ones, so an upgrade never leaves a window with no
//! program attached; programs skip sockets an earlier program already steered.

use std::{
    fs::File,
    net::{Ipv4Addr, Ipv6Addr},
    path::{Path, PathBuf},
    sync::Mutex,
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap, MapData, PerCpuArray, RingBuf},
    programs::{
        CgroupAttachMode, Program, ProgramError,
        links::{FdLink, LinkError, PinnedLink},
    },
};
use gateway_common::{
    ConnKey, LAYOUT_VERSION, Listener, OrigDst, Refusal, RefusalEvent, Registration, SteerConfig,
    maps, programs,
};

pub use super::handles::SteerError;
use super::{
    OrigDstSource, Steered, conn_key,
    handles::{lock, map_err, take},
    relay::KernelRelay,
    steered, words,
};
use crate::cgroup::SandboxRoot;

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/sluice-ebpf"));

/// Every program, in attach order. sockops goes first so that it is in place
/// before connect4|6 start recording sockets for it.
pub const PROGRAMS: [&str; 10] = [
    programs::SOCKOPS,
    programs::SOCK_CREATE,
    programs::POST_BIND4,
    programs::POST_BIND6,
    programs::RECVMSG4,
    programs::RECVMSG6,
    programs::SENDMSG4,
    programs::SENDMSG6,
    programs::CONNECT4,
    programs::CONNECT6,
];

/// Attached where the kernel allows it: the cgroup BPF LSM needs `bpf` among
/// the active LSMs. Without it packet sockets are not refused by Sluice, and
/// the sandboxes must not hold CAP_NET_RAW (they normally do not).
pub const OPTIONAL_PROGRAMS: [&str; 1] = [programs::SOCKET_CREATE_LSM];

/// The bpffs magic number (`statfs(2)` f_type).
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// The attached programs' maps, shared by the daemon's tasks.
pub struct Steering {
    identity: Mutex<HashMap<MapData, u64, Registration>>,
    listeners: Mutex<HashMap<MapData, u64, Listener>>,
    conns: Mutex<HashMap<MapData, ConnKey, OrigDst>>,
    refusals: PerCpuArray<MapData, u64>,
    events: Mutex<Option<RingBuf<MapData>>>,
    /// Names of the programs attached by this run.
    pub attached: Vec<&'static str>,
    /// The in-kernel relay, where the kernel took its program.
    pub relay: Option<std::sync::Arc<KernelRelay>>,
}

impl Steering {
    /// Loads the programs, attaches them to the sandbox root, replaces any
    /// pinned links left by an earlier run, and opens the maps (reusing the
    /// pinned ones, so registrations survive a restart).
    pub fn attach(bpffs: &Path, root: &SandboxRoot) -> Result<Steering, SteerError> {
        if OBJECT.is_empty() {
            return Err(SteerError::NoObject);
        }
        ensure_bpffs(bpffs)?;
        let maps_dir = bpffs.join(format!("maps-v{LAYOUT_VERSION}"));
        let links_dir = bpffs.join("links");
        for dir in [&maps_dir, &links_dir] {
            std::fs::create_dir_all(dir)
                .map_err(|e| SteerError::Bpffs(format!("{}: {e}", dir.display())))?;
        }
        let mut ebpf = EbpfLoader::new()
            .default_map_pin_directory(&maps_dir)
            .load(OBJECT)?;

        let mut config: Array<MapData, SteerConfig> = take(&mut ebpf, maps::CONFIG)?;
        let value = SteerConfig {
            root_level: root.level,
            _pad: 0,
        };
        config
            .set(0, value, 0)
            .map_err(|e| map_err(maps::CONFIG, e))?;

        let cgroup = File::open(&root.path).map_err(|source| SteerError::Cgroup {
            path: root.path.clone(),
            source,
        })?;
        let mut links = Vec::with_capacity(PROGRAMS.len() + OPTIONAL_PROGRAMS.len());
        for name in PROGRAMS {
            links.push((name, attach_one(&mut ebpf, name, &cgroup)?));
        }
        for name in OPTIONAL_PROGRAMS {
            match attach_lsm(&mut ebpf, name, &cgroup) {
                Ok(link) => links.push((name, link)),
                Err(err) => tracing::warn!(
                    program = name,
                    %err,
                    "not attached: packet sockets are not refused; sandboxes must not hold CAP_NET_RAW"
                ),
            }
        }
        let mut attached: Vec<&'static str> = links.iter().map(|(name, _)| *name).collect();
        // Not a cgroup program: attached to its (pinned) socket map for as
        // long as the daemon runs, since the sockets in it are the daemon's.
        let relay = match KernelRelay::attach(&mut ebpf) {
            Ok(relay) => {
                attached.push(programs::RELAY_VERDICT);
                Some(std::sync::Arc::new(relay))
            }
            Err(err) => {
                tracing::warn!(%err, "relayed connections are copied in user space");
                None
            }
        };
        // Every new program is attached; now the old ones can go.
        for (name, link) in links {
            let path = links_dir.join(name);
            replace_pin(&path, link)?;
        }
        remove_stale_map_dirs(bpffs, &maps_dir);

        Ok(Steering {
            identity: Mutex::new(take(&mut ebpf, maps::IDENTITY)?),
            listeners: Mutex::new(take(&mut ebpf, maps::LISTENERS)?),
            conns: Mutex::new(take(&mut ebpf, maps::CONNS)?),
            refusals: take(&mut ebpf, maps::REFUSALS)?,
            events: Mutex::new(Some(take(&mut ebpf, maps::EVENTS)?)),
            attached,
            relay,
        })
    }

    /// Registers a sandbox or session cgroup: its sockets are steered from
    /// now on, its DNS to the sandbox's own listener port.
    pub fn register(&self, cgroup_id: u64, kind: u32, dns_port: u16) -> Result<(), SteerError> {
        let value = Registration {
            kind,
            dns_port,
            _pad: 0,
        };
        lock(&self.identity)
            .insert(cgroup_id, value, 0)
            .map_err(|e| map_err(maps::IDENTITY, e))
    }

    /// Forgets a cgroup: its sockets are refused from now on.
    pub fn unregister(&self, cgroup_id: u64) {
        let _ = lock(&self.identity).remove(&cgroup_id);
    }

    /// The cgroup ids currently in the kernel's identity map.
    pub fn registered(&self) -> Vec<u64> {
        lock(&self.identity).keys().filter_map(Result::ok).collect()
    }

    /// Publishes the steering listener port of one network namespace.
    pub fn set_listener(&self, netns: u64, tcp_port: u16) -> Result<(), SteerError> {
        let value = Listener {
            addr4: u32::from_ne_bytes(Ipv4Addr::LOCALHOST.octets()),
            addr6: words(Ipv6Addr::LOCALHOST),
            tcp_port,
            _pad: 0,
        };
        lock(&self.listeners)
            .insert(netns, value, 0)
            .map_err(|e| map_err(maps::LISTENERS, e))
    }

    /// Forgets a namespace's listener: its sockets are refused from now on.
    pub fn remove_listener(&self, netns: u64) {
        let _ = lock(&self.listeners).remove(&netns);
    }

    /// Namespace cookies currently in the listener map.
    pub fn listener_namespaces(&self) -> Vec<u64> {
        lock(&self.listeners)
            .keys()
            .filter_map(Result::ok)
            .collect()
    }

    /// Refusals counted by the programs since they were first loaded, by reason.
    pub fn refusal_counts(&self) -> Vec<(Refusal, u64)> {
        Refusal::ALL
            .iter()
            .map(|&reason| {
                let total = self
                    .refusals
                    .get(&(reason as u32), 0)
                    .map(|per_cpu| per_cpu.iter().sum())
                    .unwrap_or(0);
                (reason, total)
            })
            .collect()
    }

    /// Hands the refusal event ring buffer to its reader (once).
    pub fn take_events(&self) -> Option<RingBuf<MapData>> {
        lock(&self.events).take()
    }
}

impl OrigDstSource for Steering {
    fn take(&self, netns: u64, peer: std::net::SocketAddr) -> Option<Steered> {
        let key = conn_key(netns, peer);
        let mut conns = lock(&self.conns);
        let orig = conns.get(&key, 0).ok()?;
        let _ = conns.remove(&key);
        Some(steered(&orig))
    }
}

/// Reads one event out of a ring buffer item.
pub fn parse_event(bytes: &[u8]) -> Option<RefusalEvent> {
    crate::sys::read_pod(bytes)
}

/// Attaches through a bpf_link. The kernel refuses attach flags on link
/// creation (`Single` passes none) and always lets several links share a
/// cgroup hook, which is what the overlap during an upgrade relies on.
fn attach_one(ebpf: &mut Ebpf, name: &'static str, cgroup: &File) -> Result<FdLink, SteerError> {
    let err = |source| SteerError::Program { name, source };
    let program = ebpf.program_mut(name).ok_or(SteerError::Program {
        name,
        source: ProgramError::UnexpectedProgramType,
    })?;
    let link: Result<FdLink, LinkError> = match program {
        Program::CgroupSockAddr(p) => {
            p.load().map_err(err)?;
            let id = p.attach(cgroup, CgroupAttachMode::Single).map_err(err)?;
            p.take_link(id).map_err(err)?.try_into()
        }
        Program::CgroupSock(p) => {
            p.load().map_err(err)?;
            let id = p.attach(cgroup, CgroupAttachMode::Single).map_err(err)?;
            p.take_link(id).map_err(err)?.try_into()
        }
        Program::SockOps(p) => {
            p.load().map_err(err)?;
            let id = p.attach(cgroup, CgroupAttachMode::Single).map_err(err)?;
            p.take_link(id).map_err(err)?.try_into()
        }
        _ => return Err(err(ProgramError::UnexpectedProgramType)),
    };
    link.map_err(|e| SteerError::Pin {
        path: PathBuf::from(name),
        message: format!("kernel did not give a bpf_link ({e}); Linux 5.7 or newer is required"),
    })
}

/// Attaches a cgroup BPF LSM program, if the kernel runs the BPF LSM.
fn attach_lsm(ebpf: &mut Ebpf, name: &'static str, cgroup: &File) -> Result<FdLink, SteerError> {
    let lsm = Path::new("/sys/kernel/security/lsm");
    if !lsm.exists() {
        // securityfs is the only place the kernel says which LSMs run.
        let _ = nix::mount::mount(
            Some("securityfs"),
            "/sys/kernel/security",
            Some("securityfs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        );
    }
    let active = std::fs::read_to_string(lsm).unwrap_or_default();
    if !active.split(',').any(|lsm| lsm.trim() == "bpf") {
        return Err(SteerError::Bpffs(format!(
            "the BPF LSM is not active (/sys/kernel/security/lsm: {:?}); boot with lsm=...,bpf",
            active.trim()
        )));
    }
    let err = |source| SteerError::Program { name, source };
    let Some(Program::LsmCgroup(program)) = ebpf.program_mut(name) else {
        return Err(err(ProgramError::UnexpectedProgramType));
    };
    let btf = aya::Btf::from_sys_fs().map_err(|e| SteerError::Bpffs(format!("kernel BTF: {e}")))?;
    program.load("socket_create", &btf).map_err(err)?;
    let id = program.attach(cgroup).map_err(err)?;
    Ok(program.take_link(id).map_err(err)?.into())
}

/// Pins `link` at `path`, detaching whatever link an earlier run pinned there.
fn replace_pin(path: &Path, link: FdLink) -> Result<(), SteerError> {
    let pin_err = |message: String| SteerError::Pin {
        path: path.to_owned(),
        message,
    };
    if path.exists() {
        match PinnedLink::from_pin(path) {
            // Unpinning and dropping the old link detaches the old program.
            Ok(old) => drop(old.unpin().map_err(|e| pin_err(e.to_string()))?),
            Err(_) => std::fs::remove_file(path).map_err(|e| pin_err(e.to_string()))?,
        }
    }
    link.pin(path).map_err(|e| pin_err(e.to_string()))?;
    Ok(())
}

/// Map directories of other layout versions belong to older builds whose
/// programs were just replaced.
fn remove_stale_map_dirs(bpffs: &Path, current: &Path) {
    let Ok(entries) = std::fs::read_dir(bpffs) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_maps = entry.file_name().to_string_lossy().starts_with("maps-v");
        if is_maps
            && path != current
            && let Err(err) = std::fs::remove_dir_all(&path)
        {
            tracing::warn!(path = %path.display(), %err, "cannot remove stale map pins");
        }
    }
}

/// Makes sure a bpf filesystem backs `dir` (mounting /sys/fs/bpf if needed).
fn ensure_bpffs(dir: &Path) -> Result<(), SteerError> {
    let is_bpffs = |p: &Path| {
        nix::sys::statfs::statfs(p)
            .map(|s| s.filesystem_type().0 == BPF_FS_MAGIC)
            .unwrap_or(false)
    };
    let default = Path::new("/sys/fs/bpf");
    if dir.starts_with(default) && !is_bpffs(default) {
        nix::mount::mount(
            Some("bpf"),
            default,
            Some("bpf"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| SteerError::Bpffs(format!("mounting bpffs at /sys/fs/bpf: {e}")))?;
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| SteerError::Bpffs(format!("{}: {e}", dir.display())))?;
    if !is_bpffs(dir) {
        return Err(SteerError::Bpffs(format!(
            "{} is not on a bpf filesystem; mount one (`mount -t bpf bpf /sys/fs/bpf`) or point `bpffs` into one",
            dir.display()
        )));
    }
    Ok(())
}
