pipeline "doctor" {
  description = "Verify an installation and reclaim what it no longer needs"

  input "id" {
    type = string
  }

  stage "doctor" "doctor" {
    id = input.id
    # The report is printed whatever doctor found; piship doctor exits 1
    # (INTEGRITY_FAILED) when it found damage.
    fail_on_damage = false
  }
}
