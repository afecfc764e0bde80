pipeline "doctor" {
  description = "Verify an installation and reclaim what it no longer needs"

  input "id" {
    type = string
  }

  stage "doctor" "doctor" {
    id = input.id
  }
}
