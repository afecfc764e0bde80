# Payload assembly: the locked npm runtime installed, pruned, stripped and
# bundled, the vendored Pi packages, resources, search tools and the pinned
# Node placed, and the inventory of the result. Used by the build and
# release pipelines.

input "inputs" {
  description = "the outputs of the pipeline's inputs stage (dist_inputs or release_inputs)"
}
input "dest" {
  type        = string
  description = "directory the payload is assembled in"
}
input "cache_home" {
  type        = string
  default     = null
  description = "runtime and bundle cache home instead of PISHIP_CACHE_HOME"
}
input "no_footprint" {
  type        = bool
  default     = false
  description = "keep every vendored Pi package file as installed"
}
input "reuse" {
  type        = string
  default     = "none"
  description = "what of the previous payload (final) the build stamp lets be reused: none, resources or all"
}
input "final" {
  type        = string
  default     = ""
  description = "the previous payload (reuse)"
}
input "runtime_after" {
  default     = null
  description = "stages the runtime install waits for (their outputs, as any value)"
}
input "bundle_after" {
  default     = null
  description = "stages the bundler waits for: bytes are rewritten only after them"
}

# The runtime part: skipped entirely when the stamp says the payload (or
# its runtime part) can be reused, or when a verified bundle entry exists.
stage "npm_install" "runtime" {
  when        = input.reuse == "none" && !input.inputs.bundle_cached
  runtime_dir = input.inputs.runtime_dir
  key         = input.inputs.install_key
  target      = input.inputs.target
  dest        = input.dest
  cache_home  = input.cache_home
  depends_on  = [input.runtime_after]
}

stage "prune" "prune" {
  when       = input.reuse == "none" && !input.inputs.bundle_cached
  dir        = input.dest
  lock       = "${input.inputs.runtime_dir}/package-lock.json"
  platform   = input.inputs.platform
  arch       = input.inputs.arch
  depends_on = [stage.runtime]
}

stage "strip" "strip" {
  when       = input.reuse == "none" && !input.inputs.bundle_cached && input.inputs.strip
  dir        = input.dest
  depends_on = [stage.prune]
}

stage "bundle" "bundle" {
  when       = input.reuse == "none" && input.inputs.bundle
  dir        = input.dest
  entry      = input.inputs.entry
  key        = input.inputs.bundle_key
  cached     = input.inputs.bundle_cached
  platform   = input.inputs.platform
  arch       = input.inputs.arch
  cache_home = input.cache_home
  depends_on = [stage.strip, input.bundle_after]
}

# Vendored Pi packages (package blocks), each from its own lock, beside
# the runtime: the bundler never reads them. The Pi-only stages apply to a
# distribution that has what they place.
stage "pi_packages" "pi_packages" {
  when         = input.reuse == "none" && input.inputs.pi_packages > 0
  distribution = input.inputs.dir
  dest         = input.dest
  cache_home   = input.cache_home
  no_footprint = input.no_footprint
  strip        = input.inputs.strip
  target       = input.inputs.target
  depends_on   = [stage.bundle]
}

stage "resources" "resources" {
  when         = input.reuse != "all"
  distribution = input.inputs.dir
  dest         = input.dest
  previous     = input.reuse == "resources" ? input.final : null
  depends_on   = [stage.bundle, stage.pi_packages]
}

# After resources: a reused payload is linked in without tools/.
stage "search_tools" "search_tools" {
  when         = input.reuse != "all" && input.inputs.search_tools > 0
  distribution = input.inputs.dir
  dest         = input.dest
  platform     = input.inputs.platform
  arch         = input.inputs.arch
  target       = input.inputs.target
  depends_on   = [stage.resources]
}

# The pinned Node (the node block), for the target the inputs name (never
# the host's), at node/bin/node (node/node.exe on win32). After resources:
# a reused payload is linked in without it.
stage "node_runtime" "node" {
  when         = input.reuse != "all" && input.inputs.node > 0
  distribution = input.inputs.dir
  dest         = input.dest
  platform     = input.inputs.platform
  arch         = input.inputs.arch
  target       = input.inputs.target
  depends_on   = [stage.resources]
}

stage "inventory" "inventory" {
  when            = input.reuse != "all"
  dir             = input.dest
  distribution    = input.inputs.dir
  platform        = input.inputs.platform
  arch            = input.inputs.arch
  target          = input.inputs.target
  known_entry     = input.inputs.bundle ? stage.bundle.entry : stage.runtime.entry
  known_inventory = input.reuse == "resources" ? "${input.final}/metadata/inventory.json" : null
  cache_home      = input.cache_home
  depends_on      = [stage.search_tools, stage.node]
}

output "inventory" {
  description = "the payload's inventory: sha256, files, bytes, hashed"
  value       = stage.inventory
}
output "pi_trees" {
  description = "the vendored Pi packages' installed trees (pi_packages' trees)"
  value       = stage.pi_packages.trees
}
