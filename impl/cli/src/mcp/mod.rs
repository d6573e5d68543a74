//! `stoat mcp`: the MCP server inside the binary (server: the stdio JSON-RPC loop; tools: the
//! tool table; guards: agent_access, names, host paths, forbidden fields; rate: rate limits;
//! clients: `mcp doctor` and `mcp install`). docs/mcp.md and docs/decisions/mcp.md say why.

pub mod clients;
pub mod guards;
pub mod rate;
pub mod schemas;
pub mod server;
pub mod tools;
