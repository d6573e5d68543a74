"""Drives `stoat mcp` with the official MCP Python SDK's stdio client, end to end.

Usage: drive.py <stoat binary> [REVISION]. With REVISION the client asks for that protocol
revision instead of the SDK's newest (the SDK's handshake is otherwise unchanged) and checks
that the server speaks it: outputSchema and structuredContent only from 2025-06-18 on. The
environment (HOME, STOAT_HOME, PATH, STOAT_MCP_RATE...)
is passed to the server unchanged. The caller has prepared the data root: an observe VM
`obs`, an exec VM `ex`, and the alpine-virt image in isos/. Prints one line per check and
exits 1 on the first failure. The SDK itself checks every successful result against the
tool's outputSchema, so a result that breaks it fails the call.
"""

import asyncio
import json
import os
import sys

import mcp.client.session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Revisions with structuredContent (and so outputSchema); older ones answer text alone.
STRUCTURED = ("2025-06-18", "2025-11-25")


def field(obj, snake, camel):
    """Reads a result attribute under the SDK's v2 (snake) or v1 (camel) name."""
    return getattr(obj, snake, None) if hasattr(obj, snake) else getattr(obj, camel, None)


def check(condition, what, detail=""):
    if not condition:
        print(f"FAIL {what} {detail}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def call(session, tool, arguments):
    result = await session.call_tool(tool, arguments)
    structured = field(result, "structured_content", "structuredContent")
    text = json.loads(result.content[0].text)
    is_error = bool(field(result, "is_error", "isError"))
    if session.protocol_version not in STRUCTURED:
        check(structured is None, f"{tool}: no structured content before 2025-06-18")
    elif is_error:
        # The outputSchema describes success; a failure's {code, message} is the text alone.
        check(structured is None, f"{tool}: a failure carries no structured content")
    else:
        check(structured == text, f"{tool}: structured content equals its text")
    return is_error, text


async def expect_ok(session, tool, arguments):
    is_error, data = await call(session, tool, arguments)
    check(not is_error, f"{tool} {json.dumps(arguments)} succeeds", json.dumps(data))
    return data


async def expect_error(session, tool, arguments, code):
    is_error, data = await call(session, tool, arguments)
    check(is_error and data.get("code") == code, f"{tool} {json.dumps(arguments)} -> {code}", json.dumps(data))
    return data


async def main(binary, revision):
    if revision:
        # The handshake asks for the newest revision the SDK knows; ask for this one.
        mcp.client.session.LATEST_HANDSHAKE_VERSION = revision
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ), cwd=os.environ["HOME"])
    async with stdio_client(params) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            version = field(init, "protocol_version", "protocolVersion")
            server = field(init, "server_info", "serverInfo")
            check(version in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"), f"negotiated protocol {version}")
            if revision:
                check(version == revision, f"the server speaks the asked-for {revision}", version)
            check(server.name == "stoat", "server is stoat")

            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            check(len(listed.tools) == 27, f"27 tools listed ({len(listed.tools)})")
            for name in ("list_vms", "vm_status", "create", "update", "destroy", "exec", "copy_to", "copy_from"):
                check(name in names, f"tool {name} listed")
            for tool in listed.tools:
                schema = field(tool, "input_schema", "inputSchema")
                check(schema.get("additionalProperties") is False, f"{tool.name} schema is closed")
                # The SDK validates every successful call's structured content against this,
                # with no way to fetch a $ref: each schema must stand alone.
                output = field(tool, "output_schema", "outputSchema")
                if version in STRUCTURED:
                    check(output is not None and output.get("type") == "object", f"{tool.name} has an object outputSchema")
                else:
                    check(output is None, f"{tool.name} offers no outputSchema where no structured content follows")
            annotations = {t.name: t.annotations for t in listed.tools}
            check(field(annotations["list_vms"], "read_only_hint", "readOnlyHint") is True, "list_vms is read-only")
            check(field(annotations["destroy"], "destructive_hint", "destructiveHint") is True, "destroy is destructive")
            check(field(annotations["exec"], "open_world_hint", "openWorldHint") is True, "exec is open-world")

            vms = await expect_ok(session, "list_vms", {})
            check(sorted(v["name"] for v in vms["vms"]) == ["ex", "obs"], "list_vms sees ex and obs")
            status = await expect_ok(session, "vm_status", {"vm": "obs"})
            check(status["vm"]["agent_access"] == "observe", "vm_status shows obs's agent_access")

            created = await expect_ok(
                session, "create", {"name": "agentvm", "image": "alpine-virt", "ram_mb": 512, "agent_access": "manage"}
            )
            check(created["vm"]["name"] == "agentvm" and created["vm"]["state"] == "stopped", "create made agentvm")
            updated = await expect_ok(session, "update", {"vm": "agentvm", "cpus": 2})
            check(updated["changed"] == ["cpus"] and updated["vm"]["cpus"] == 2, "update changed cpus")
            await expect_error(session, "update", {"vm": "agentvm", "share": "/etc"}, "access_denied")
            await expect_error(session, "update", {"vm": "agentvm", "agent_access": "exec"}, "access_denied")
            await expect_error(session, "create", {"name": "byo", "image": "/tmp/x.qcow2"}, "invalid_spec")

            await expect_error(session, "exec", {"vm": "obs", "command": ["id"]}, "access_denied")
            await expect_error(session, "exec", {"vm": "agentvm", "command": ["id"]}, "access_denied")
            await expect_error(session, "stop", {"vm": "obs"}, "access_denied")

            await expect_error(
                session, "copy_from", {"vm": "ex", "remote": "/etc/passwd", "local": "../../escape"}, "access_denied"
            )
            await expect_error(
                session, "copy_to", {"vm": "ex", "local": "/etc/passwd", "remote": "/tmp/p"}, "access_denied"
            )
            await expect_error(session, "copy_to", {"vm": "ex", "local": "link-out", "remote": "/tmp/p"}, "access_denied")

            deleted = await expect_ok(session, "destroy", {"vm": "agentvm"})
            check(deleted["deleted"] is True, "destroy deleted agentvm")
            vms = await expect_ok(session, "list_vms", {})
            check(sorted(v["name"] for v in vms["vms"]) == ["ex", "obs"], "agentvm is gone")

            # STOAT_MCP_RATE is 3/0.01 here: the fourth call of one tool is refused.
            for _ in range(3):
                await expect_ok(session, "list_images", {})
            refused = await expect_error(session, "list_images", {}, "rate_limited")
            check(refused.get("retry_after_seconds", 0) >= 1, "rate_limited carries a retry hint")
            await expect_ok(session, "doctor", {})
    print("all MCP client checks passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
