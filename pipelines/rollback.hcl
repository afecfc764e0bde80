pipeline "rollback" {
  description = "Switch an installed distribution back to its previous release"

  input "id" {
    type = string
  }

  stage "rollback" "rollback" {
    id = input.id
  }
}
